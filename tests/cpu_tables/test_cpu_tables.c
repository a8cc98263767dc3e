/* test_cpu_tables.c — the cpu module's op tables give every op one entry.
 * kernel.c searches the families' tables in order and takes the first
 * entry for an op, so a second entry (and every kernel behind it) would
 * never run; movement.c and half of elementwise.c were such dead code. The
 * module refuses to initialise when two entries claim an op
 * (cpu_op_tables_check), naming the op and both files.
 *
 * Cases: `loaded`, the staged module initialises (its tables are clean);
 * `duplicates`, cpu_op_tables_duplicate, the check itself, finds a
 * duplicate within one table and across two, and none where there is none.
 * Usage: test_cpu_tables <case> <stage dir>. */
#include <stdio.h>
#include <string.h>

#include "../harness.h"
#include "cpu_kernel.h"

static void case_loaded(void)
{
    const char *dir = th_tempdir();
    const char *ini = th_path(dir, "backend.ini");
    char text[4096];
    snprintf(text, sizeof text, "[runtime]\nmodules = %s/libplinth_cpu.so\n", th_arg(0));
    th_write_file(ini, text, 0600);
    pl_runtime_options o = th_options(ini);
    pl_runtime *rt = th_runtime_create(&o);
    long i = th_find_by_name(rt, "cpu");
    TH_CHECK(i >= 0, "no cpu module in %s", th_arg(0));
    pl_module_info info;
    th_module_info(rt, (size_t)i, &info);
    TH_CHECK(info.status == PL_MODULE_LOADED, "the cpu module is %s: %s",
             pl_module_status_name(info.status), info.reason);
    pl_runtime_destroy(rt);
}

static pl_status *fake_build(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out)
{
    (void)ctx, (void)node, (void)out;
    return NULL;
}

static void case_duplicates(void)
{
    static const cpu_op_entry a[] = {
        {"Add", fake_build, 2, 2, 0, 0}, {"Mul", fake_build, 2, 2, 0, 0}, {NULL, NULL, 0, 0, 0, 0}};
    static const cpu_op_entry b[] = {
        {"Relu", fake_build, 1, 1, 0, 0}, {"Mul", fake_build, 2, 2, 0, 0}, {NULL, NULL, 0, 0, 0, 0}};
    static const cpu_op_entry c[] = {
        {"Tanh", fake_build, 1, 1, 0, 0}, {"Exp", fake_build, 1, 1, 0, 0},
        {"Tanh", fake_build, 1, 1, 0, 0}, {NULL, NULL, 0, 0, 0, 0}};
    static const cpu_op_entry empty[] = {{NULL, NULL, 0, 0, 0, 0}};
    size_t first = 99, second = 99;

    const cpu_op_entry *const clean[] = {a, empty, c + 1};
    TH_CHECK(cpu_op_tables_duplicate(clean, 3, &first, &second) == NULL,
             "a duplicate found in clean tables");

    const cpu_op_entry *const across[] = {empty, a, b};
    const char *op = cpu_op_tables_duplicate(across, 3, &first, &second);
    TH_CHECK(op != NULL && strcmp(op, "Mul") == 0 && first == 1 && second == 2,
             "across tables: %s in %zu and %zu", op ? op : "(none)", first, second);

    const cpu_op_entry *const within[] = {a, c};
    op = cpu_op_tables_duplicate(within, 2, &first, &second);
    TH_CHECK(op != NULL && strcmp(op, "Tanh") == 0 && first == 1 && second == 1,
             "within a table: %s in %zu and %zu", op ? op : "(none)", first, second);
}

int main(int argc, char **argv)
{
    static const th_case cases[] = {
        {"loaded", case_loaded},
        {"duplicates", case_duplicates},
    };
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 1, "<stage dir>");
}
