/* examples/app.c — an application's whole story with an accelerator, in C:
 * load the accelerator's library by path, list the devices, configure one,
 * call a vendor function, bind a model to the accelerator, run it and read
 * the output. examples/app.py does the same in Python and prints the same
 * lines.
 *
 *   build/bin/plinth_app [MODULE_DIR] [MODEL]
 *
 * MODULE_DIR defaults to modules.d, MODEL to examples/mlp/model.json (an
 * MLP: x f32[1,64] -> y f32[1,10]); run it from the tree's root. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plinth/plinth.h>

/* Prints a failure and says whether there was one (the status is freed). */
static int failed(const char *what, pl_status *st)
{
    if (st == NULL)
        return 0;
    fprintf(stderr, "app: %s: %s\n", what, pl_status_message(st));
    pl_status_free(st);
    return 1;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "modules.d";
    const char *model_path = argc > 2 ? argv[2] : "examples/mlp/model.json";
    char path[4096];
    int rc = 1;
    pl_runtime *rt = NULL;
    pl_model *model = NULL;
    pl_session *session = NULL;

    /* 1. A runtime with no module folder: the application loads what it
     *    needs by path. */
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = "examples/app.ini",
                            .ignore_environment = true};
    if (failed("runtime", pl_runtime_create(&o, &rt)))
        return 1;
    static const char *const libs[] = {"libplinth_cpu.so", "libplinth_json.so",
                                       "libplinth_example_acc.so"};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, libs[i]);
        if (failed(path, pl_runtime_load_module(rt, path, NULL)))
            goto out;
    }

    /* 2. The devices. */
    for (size_t i = 0; i < pl_runtime_device_count(rt); i++) {
        pl_device_info d = {.struct_size = sizeof d};
        if (failed("device", pl_runtime_device_info(rt, i, &d)))
            goto out;
        printf("device %s:%d %s\n", d.module, d.index, d.name);
    }

    /* 3. Configure the accelerator: no simulated latency. */
    const char *key = "latency_us", *value = "0";
    if (failed("configure", pl_runtime_configure_module(rt, "example_acc", &key, &value, 1)))
        goto out;
    long acc = pl_runtime_find_module(rt, "example_acc");
    for (size_t k = 0; k < pl_runtime_module_output_count(rt, (size_t)acc); k++) {
        const char *ok, *ov;
        pl_runtime_module_output(rt, (size_t)acc, k, &ok, &ov);
        if (strcmp(ok, "latency_us") == 0 || strcmp(ok, "devices") == 0)
            printf("configure %s = %s\n", ok, ov);
    }

    /* 4. A vendor function: device 1 to performance mode, then its sensor. */
    pl_value args[2] = {{.type = 'i', .as.i = 1}, {.type = 's', .as.s = "performance"}};
    pl_value result;
    if (failed("set_power_mode",
               pl_runtime_call(rt, "example_acc", "set_power_mode", args, 2, &result)))
        goto out;
    printf("set_power_mode(1, performance) = %d\n", (int)result.as.i);
    if (failed("temperature_c", pl_runtime_call(rt, "example_acc", "temperature_c", args, 1,
                                                &result)))
        goto out;
    printf("temperature_c(1) = %.1f\n", result.as.d);

    /* 5. The model, bound to accelerator device 1 (cpu takes what it
     *    cannot run). */
    if (failed(model_path, pl_model_load(rt, model_path, &model)))
        goto out;
    const char *order[] = {"example_acc:1", "cpu"};
    pl_session_options so = {.struct_size = sizeof so, .order = order, .n_order = 2};
    if (failed("session", pl_session_create(model, &so, &session)))
        goto out;
    for (size_t i = 0; i < pl_session_step_count(session); i++) {
        const char *name, *backend;
        uint64_t ns, runs;
        pl_session_step_info(session, i, &name, &backend, &ns, &runs);
        printf("step %s on %s\n", name, backend);
    }

    /* 6. Run it on a fixed input and read the output. */
    float x[64], y[10];
    for (int i = 0; i < 64; i++)
        x[i] = 0.5f * sinf((float)i);
    int64_t xs[2] = {1, 64}, ys[2] = {1, 10};
    pl_io in = {.name = "x", .tensor = {.data = x, .ndim = 2, .dtype = PL_DTYPE_F32,
                                        .shape = xs, .struct_size = sizeof(pl_tensor)}};
    pl_io out = {.name = "y", .tensor = {.data = y, .ndim = 2, .dtype = PL_DTYPE_F32,
                                         .shape = ys, .struct_size = sizeof(pl_tensor)}};
    if (failed("run", pl_session_run(session, &in, 1, &out, 1)))
        goto out;
    printf("y =");
    for (int i = 0; i < 10; i++)
        printf(" %.6f", y[i]);
    printf("\n");
    rc = 0;
out:
    pl_session_destroy(session);
    pl_model_destroy(model);
    pl_runtime_destroy(rt);
    return rc;
}
