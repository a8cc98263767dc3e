#!/usr/bin/env python3
"""Export classic machine-learning models (scikit-learn, LightGBM, XGBoost, CatBoost,
Hummingbird) to ONNX as a zoo.

    python3 bench/zoo/make_ml_zoo.py [--out DIR] [--only NAME,...]

(the python3 on PATH needs onnx, onnxruntime, scikit-learn and skl2onnx; lightgbm, xgboost and
onnxmltools, catboost, and hummingbird-ml with torch for those models, left out with a note when
missing. hummingbird-ml 0.4.12 pins onnx <= 1.16.1 but runs with newer: `pip install --no-deps
hummingbird-ml onnxconverter-common dill psutil`.) These exporters write
ai.onnx.ml's operators, not the networks of the other zoos: TreeEnsembleClassifier and
TreeEnsembleRegressor (forests, boosted trees, one decision tree, AdaBoost, bagging, an
isolation forest; LightGBM's and XGBoost's with NaN sent the way
nodes_missing_value_tracks_true says, XGBoost's with BRANCH_LT and no ai.onnx import at all,
LightGBM's at ai.onnx opsets 8 and 9), LinearClassifier (logistic regression, linear SVMs,
ridge classification, stacking), SVMRegressor (SVR, NuSVR, one-class SVM; RBF, POLY and SIGMOID
kernels), SVMClassifier (SVC, NuSVC, with and without probabilities), LabelEncoder,
LinearRegressor, Scaler, Normalizer and ArrayFeatureExtractor, and standard ops for nearest neighbours, PCA, k-means, naive Bayes and MLPs;
CatBoost's own export (a binary classifier weighting both classes, a ZipMap after each
classifier) and Hummingbird's tensor programs of forests (GEMM, tree_trav and perf_tree_trav);
pipelines over a table with NaNs and integer-coded categories (Imputer, OneHotEncoder, binning,
polynomial features, feature selection). Classifiers are
exported with zipmap off (with the default ZipMap, Plinth gives the probabilities as the
[N, C] tensor it zips, where ONNX Runtime gives a list of dicts: the references would
differ in form only); probabilities and labels are compared.

Inputs are 64 rows of the training data (random classification and regression problems
with a fixed seed; the *_nan models' data has NaN in two columns); references are ONNX
Runtime's outputs. Writes make_zoo.py's format (NAME.onnx, NAME.in.*.npy, NAME.ref.*.npy,
manifest.json) into DIR (default build/ml_zoo): `bench/zoo/run_zoo.py --zoo DIR` checks
Plinth against them. Every output within 1.4e-6 of ONNX Runtime 1.20 on cpu and on the
default configuration, every label equal (45 models; string labels and categories since
2026-12-06, compared exactly; ten text pipelines since 2026-12-07: TfidfVectorizer and
CountVectorizer as skl2onnx writes them, StringNormalizer and com.microsoft Tokenizer, and a
FeatureHasher, com.microsoft MurmurHash3 of strings, over generated documents). HistGradientBoosting is left out (skl2onnx 1.20 fails to export it).
"""
import argparse
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def data():
    import numpy as np
    from sklearn.datasets import make_classification, make_regression
    x2, y2 = make_classification(300, 10, n_informative=6, random_state=0)
    x3, y3 = make_classification(300, 10, n_informative=6, n_classes=4, random_state=0)
    xr, yr = make_regression(300, 10, random_state=0)
    xm, ym = make_regression(300, 10, n_targets=3, random_state=0)
    xn = x2.copy()
    xn[::7, 3] = np.nan
    xn[::5, 0] = np.nan
    # a table as pipelines meet one: NaNs in four numeric columns, two
    # integer-coded categorical ones (codes 0-3 and 0-2)
    rng = np.random.default_rng(0)
    xc = x2.copy()
    xc[:, 8] = rng.integers(0, 4, len(xc))
    xc[:, 9] = rng.integers(0, 3, len(xc))
    xc[:, :4][rng.random((len(xc), 4)) < 0.1] = np.nan
    f = np.float32
    # string class labels, and a table of string categories ("missing" for a gap)
    names = np.array(["setosa", "versicolor", "virginica", "ünïcode"])
    cats = rng.choice(np.array(["red", "green", "blue", "teal"]), (len(x2), 3))
    cats[rng.random(len(x2)) < 0.1, 2] = "missing"
    # documents: words of a small vocabulary (capitals, digits, accents, punctuation, white
    # space of several kinds, an empty one); the label says which half of it dominates
    vocab = np.array(["the", "The", "quick", "brown", "fox", "jumps", "over", "lazy", "dog",
                      "and", "is", "ONNX", "runtime", "model", "text", "Ünïcödé", "wörds",
                      "123", "4567", "data", "science", "a", "b", "x_y", "end."])
    seps = np.array([" ", " ", "  ", ", ", "\t", "! ", "\n"])
    docs, dl = [], []
    for i in range(300):
        k = rng.integers(0, 12)
        half = rng.integers(0, 2)
        w = rng.integers(0, len(vocab), k)
        w = np.where(rng.random(k) < 0.6, w % 12 + 12 * half, w)
        docs.append("".join(str(vocab[j]) + str(rng.choice(seps)) for j in w).strip())
        dl.append(half)
    docs = np.array(docs, dtype=object)
    return dict(bin=(x2.astype(f), y2), multi=(x3.astype(f), y3), reg=(xr.astype(f), yr.astype(f)),
                text=(docs, np.array(dl)), text_reg=(docs, np.array(dl, f) + rng.random(300, f)),
                tokens=(np.array([(d.split() + [""] * 6)[:6] for d in docs], dtype=object),
                        np.array(dl)),
                reg3=(xm.astype(f), ym.astype(f)), nan=(xn.astype(f), y2),
                mixed=(xc.astype(f), y2), mixed_reg=(xc.astype(f), yr.astype(f)),
                multi_str=(x3.astype(f), names[y3]), bin_str=(x2.astype(f), names[y2 + 1]),
                cats=(cats.astype(object), names[y2]))  # object: as SimpleImputer wants them


def sklearn_models():
    import numpy as np
    from sklearn import (cluster as C, decomposition as D, discriminant_analysis as DA,
                         ensemble as E, linear_model as L, naive_bayes as NB, neighbors as N,
                         neural_network as NN, svm as S, tree as T)
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_selection import SelectKBest, VarianceThreshold
    from sklearn.impute import SimpleImputer
    from sklearn.feature_extraction import FeatureHasher
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
    from sklearn.pipeline import make_pipeline
    from sklearn import calibration as CAL, cross_decomposition as CD, gaussian_process as GP
    from sklearn.preprocessing import (KBinsDiscretizer, MaxAbsScaler, MinMaxScaler, Normalizer,
                                       OneHotEncoder, OrdinalEncoder, PolynomialFeatures,
                                       PowerTransformer,
                                       QuantileTransformer, RobustScaler, StandardScaler)
    mixed = ColumnTransformer([("num", make_pipeline(SimpleImputer(strategy="median"),
                                                     StandardScaler()), [0, 1, 2, 3, 4, 5, 6, 7]),
                               ("cat", OneHotEncoder(handle_unknown="ignore"), [8, 9])])
    return [
        # pipelines over a table with gaps and categories (Imputer,
        # OneHotEncoder, ArrayFeatureExtractor, Concat, Scaler)
        ("pipe_columns", "pipeline", make_pipeline(mixed, L.LogisticRegression(max_iter=300)),
         "mixed"),
        ("pipe_kbins", "pipeline", make_pipeline(SimpleImputer(), KBinsDiscretizer(4, encode="onehot-dense"),
                                                 L.LogisticRegression(max_iter=300)), "mixed"),
        ("pipe_poly", "pipeline", make_pipeline(SimpleImputer(), PolynomialFeatures(2), RobustScaler(),
                                                L.Ridge()), "mixed_reg"),
        ("pipe_select", "pipeline", make_pipeline(SimpleImputer(), MaxAbsScaler(), VarianceThreshold(0.01),
                                                  SelectKBest(k=6), D.TruncatedSVD(3),
                                                  L.LogisticRegression()), "mixed"),
        ("rf_bin", "random forest", E.RandomForestClassifier(20, random_state=0), "bin"),
        ("rf_multi", "random forest", E.RandomForestClassifier(20, random_state=0), "multi"),
        ("et_multi", "extra trees", E.ExtraTreesClassifier(15, max_depth=8, random_state=0), "multi"),
        ("dt_bin", "decision tree", T.DecisionTreeClassifier(random_state=0), "bin"),
        ("gb_bin", "gradient boosting", E.GradientBoostingClassifier(n_estimators=30, random_state=0), "bin"),
        ("gb_multi", "gradient boosting", E.GradientBoostingClassifier(n_estimators=20, random_state=0), "multi"),
        ("rf_reg", "random forest", E.RandomForestRegressor(20, random_state=0), "reg"),
        ("gb_reg", "gradient boosting", E.GradientBoostingRegressor(n_estimators=40, random_state=0), "reg"),
        ("dt_reg3", "decision tree", T.DecisionTreeRegressor(max_depth=6, random_state=0), "reg3"),
        ("et_reg", "extra trees", E.ExtraTreesRegressor(10, random_state=0), "reg"),
        ("logreg_bin", "logistic regression", make_pipeline(StandardScaler(), L.LogisticRegression()), "bin"),
        ("logreg_multi", "logistic regression",
         make_pipeline(MinMaxScaler(), L.LogisticRegression(max_iter=500)), "multi"),
        ("linsvc_bin", "linear SVM", S.LinearSVC(), "bin"),
        ("linsvc_multi", "linear SVM", S.LinearSVC(), "multi"),
        ("logreg_norm", "logistic regression",
         make_pipeline(Normalizer(), L.LogisticRegression(max_iter=500)), "multi"),
        ("sgd_multi", "SGD classifier", L.SGDClassifier(random_state=0), "multi"),
        ("ridge_clf", "ridge classifier", L.RidgeClassifier(), "multi"),
        ("ridge", "ridge regression", L.Ridge(), "reg"),
        ("svr_rbf", "support vector regression", S.SVR(), "reg"),
        ("svr_poly", "support vector regression", S.SVR(kernel="poly", degree=2), "reg"),
        ("nusvr", "support vector regression", S.NuSVR(kernel="sigmoid"), "reg"),
        ("oneclass_svm", "one-class SVM", S.OneClassSVM(gamma=0.1), "multi_x"),
        ("svc_multi", "support vector classifier", S.SVC(), "multi"),
        ("svc_bin_proba", "support vector classifier", S.SVC(probability=True, random_state=0), "bin"),
        ("svc_multi_proba", "support vector classifier",
         S.SVC(kernel="poly", degree=2, probability=True, random_state=0), "multi"),
        ("nusvc_bin", "support vector classifier", S.NuSVC(), "bin"),
        ("iforest", "isolation forest", E.IsolationForest(n_estimators=10, random_state=0), "multi_x"),
        ("knn_clf", "nearest neighbours", N.KNeighborsClassifier(5), "multi"),
        ("knn_reg", "nearest neighbours", N.KNeighborsRegressor(5), "reg"),
        ("pca", "PCA", D.PCA(4), "multi_x"),
        ("kmeans", "k-means", C.KMeans(3, n_init=3, random_state=0), "multi_x"),
        ("gnb", "naive Bayes", NB.GaussianNB(), "multi"),
        ("mlp_clf", "multi-layer perceptron",
         NN.MLPClassifier((16,), max_iter=300, random_state=0), "multi"),
        ("ada_clf", "AdaBoost", E.AdaBoostClassifier(n_estimators=10, random_state=0), "multi"),
        ("bag_reg", "bagging", E.BaggingRegressor(n_estimators=5, random_state=0), "reg"),
        ("stack_clf", "stacking", E.StackingClassifier([("a", L.LogisticRegression()),
                                                        ("b", NB.GaussianNB())]), "multi"),
        ("lda", "linear discriminant analysis", DA.LinearDiscriminantAnalysis(), "multi"),
        # more of skl2onnx's converters (2026-12-06): a Gaussian process (its kernel in a
        # Scan), calibrated classifiers (sigmoid; isotonic as ArgMin over thresholds),
        # quantile and Yeo-Johnson transforms, PLS, distance-weighted neighbours, Bernoulli
        # naive Bayes, robust regressors, perceptrons, kernel PCA
        ("gpr", "Gaussian process", GP.GaussianProcessRegressor(), "reg"),
        ("calib_sig", "calibrated classifier",
         CAL.CalibratedClassifierCV(L.LogisticRegression(), method="sigmoid", cv=3), "bin"),
        ("calib_iso", "calibrated classifier",
         CAL.CalibratedClassifierCV(S.LinearSVC(), method="isotonic", cv=3), "multi"),
        ("pipe_quantile", "pipeline",
         make_pipeline(QuantileTransformer(n_quantiles=50), L.Ridge()), "reg"),
        ("pipe_power", "pipeline", make_pipeline(PowerTransformer(), L.Ridge()), "reg"),
        ("pls", "partial least squares", CD.PLSRegression(2), "reg"),
        ("knn_dist", "nearest neighbours", N.KNeighborsClassifier(5, weights="distance"), "multi"),
        ("bernoulli_nb", "naive Bayes", NB.BernoulliNB(), "multi"),
        ("huber", "robust regression", L.HuberRegressor(), "reg"),
        ("perceptron", "perceptron", L.Perceptron(random_state=0), "multi"),
        ("pipe_kpca", "pipeline", make_pipeline(D.KernelPCA(4, kernel="rbf"), L.Ridge()), "reg"),
        # string tensors (2026-12-06): string class labels (classlabels_strings, or an
        # ArrayFeatureExtractor over the class names) and tables of string categories
        # (OneHotEncoder, OrdinalEncoder's LabelEncoder, a string SimpleImputer)
        ("rf_strlabels", "random forest", E.RandomForestClassifier(10, max_depth=6, random_state=0),
         "multi_str"),
        ("logreg_strlabels", "logistic regression", L.LogisticRegression(max_iter=500),
         "multi_str"),
        ("mlp_strlabels", "multi-layer perceptron",
         NN.MLPClassifier((16,), max_iter=300, random_state=0), "bin_str"),
        ("svc_strlabels", "support vector classifier", S.SVC(probability=True, random_state=0),
         "multi_str"),
        ("knn_strlabels", "nearest neighbours", N.KNeighborsClassifier(5), "multi_str"),
        ("pipe_strcats", "pipeline",
         make_pipeline(ColumnTransformer([("oh", OneHotEncoder(handle_unknown="ignore"), [0, 1]),
                                          ("ord", OrdinalEncoder(), [2])]),
                       L.LogisticRegression(max_iter=300)), "cats"),
        ("imputer_str", "imputer",
         SimpleImputer(strategy="constant", fill_value="none", missing_values="missing"), "cats_x"),
        ("ordinal_str", "ordinal encoder", OrdinalEncoder(), "cats_x"),
        # text (2026-12-07): skl2onnx's TfidfVectorizer and CountVectorizer write
        # StringNormalizer (stopwords too), com.microsoft Tokenizer and TfIdfVectorizer;
        # FeatureHasher com.microsoft MurmurHash3 of the tokens' strings
        ("tfidf_logreg", "text pipeline",
         make_pipeline(TfidfVectorizer(), L.LogisticRegression(max_iter=300)), "text"),
        ("tfidf_bigram_logreg", "text pipeline",
         make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
                       L.LogisticRegression(max_iter=300)), "text"),
        ("count_nb", "text pipeline", make_pipeline(CountVectorizer(), NB.MultinomialNB()), "text"),
        ("count_binary_cased", "text pipeline",
         make_pipeline(CountVectorizer(binary=True, lowercase=False),
                       L.LogisticRegression(max_iter=300)), "text"),
        ("tfidf_stopwords", "text pipeline",
         make_pipeline(TfidfVectorizer(stop_words=["the", "and", "is"]),
                       L.LogisticRegression(max_iter=300)), "text"),
        ("tf_l1_sgd", "text pipeline",
         make_pipeline(TfidfVectorizer(max_features=10, norm="l1", use_idf=False),
                       L.SGDClassifier(loss="log_loss", random_state=0)), "text"),
        ("tfidf_svd", "text pipeline",
         make_pipeline(TfidfVectorizer(), D.TruncatedSVD(3, random_state=0)), "text_x"),
        ("tfidf_ridge", "text pipeline", make_pipeline(TfidfVectorizer(), L.Ridge()), "text_reg"),
        ("feature_hasher_logreg", "text pipeline",
         make_pipeline(FeatureHasher(32, input_type="string", dtype=np.float32),
                       L.LogisticRegression(max_iter=300)),
         "tokens"),
        ("count_pattern_forest", "text pipeline",
         make_pipeline(CountVectorizer(token_pattern=r"\b\w+\b"),
                       E.RandomForestClassifier(5, random_state=0)), "text"),
    ]


def export_sklearn(model, x):
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import StringTensorType
    last = model.steps[-1][1] if hasattr(model, "steps") else model
    target = {"": 15, "ai.onnx.ml": 3}
    kw = {}
    if x.ndim == 1:  # documents: one string a row
        kw = dict(initial_types=[("text", StringTensorType([None, 1]))])
        x = None
    else:
        x = x[:1]
    try:  # a classifier whose converter has the zipmap option (LinearSVC's has not)
        return to_onnx(model, x, options={id(last): {"zipmap": False}}, target_opset=target, **kw)
    except (NameError, RuntimeError):
        return to_onnx(model, x, target_opset=target, **kw)


def boosted_models():
    out = []
    try:
        import lightgbm
        from onnxmltools import convert_lightgbm
        for name, m, d in (("lgbm_bin", lightgbm.LGBMClassifier(n_estimators=30, verbose=-1), "bin"),
                           ("lgbm_multi", lightgbm.LGBMClassifier(n_estimators=20, verbose=-1), "multi"),
                           ("lgbm_reg", lightgbm.LGBMRegressor(n_estimators=30, verbose=-1), "reg"),
                           ("lgbm_nan", lightgbm.LGBMClassifier(n_estimators=30, verbose=-1), "nan")):
            out.append((name, "LightGBM", m, d, convert_lightgbm))
    except ImportError:
        print("make_ml_zoo: lightgbm or onnxmltools missing: no LightGBM models", file=sys.stderr)
    try:
        import xgboost
        from onnxmltools import convert_xgboost
        for name, m, d in (("xgb_bin", xgboost.XGBClassifier(n_estimators=30, max_depth=4), "bin"),
                           ("xgb_multi", xgboost.XGBClassifier(n_estimators=20, max_depth=4), "multi"),
                           ("xgb_reg", xgboost.XGBRegressor(n_estimators=30, max_depth=5), "reg"),
                           ("xgb_nan", xgboost.XGBClassifier(n_estimators=30, max_depth=4), "nan")):
            out.append((name, "XGBoost", m, d, convert_xgboost))
    except ImportError:
        print("make_ml_zoo: xgboost or onnxmltools missing: no XGBoost models", file=sys.stderr)
    return out


def catboost_models():
    """CatBoost's own ONNX export (`save_model(format="onnx")`): TreeEnsembleClassifier with
    weights for both classes of a binary model (class 0 the negation of class 1) and LOGISTIC,
    SOFTMAX over a multi-class one, TreeEnsembleRegressor; ai.onnx.ml imported alone, and a
    ZipMap after every classifier (kept: its reference is the [N, C] table it zips)."""
    try:
        import catboost
    except ImportError:
        print("make_ml_zoo: catboost missing: no CatBoost models", file=sys.stderr)
        return []
    kw = dict(verbose=0, random_seed=0, thread_count=1)
    return [("cb_bin", "CatBoost", catboost.CatBoostClassifier(iterations=40, depth=5, **kw), "bin"),
            ("cb_multi", "CatBoost", catboost.CatBoostClassifier(iterations=30, depth=4,
                                                                 loss_function="MultiClass", **kw),
             "multi"),
            ("cb_reg", "CatBoost", catboost.CatBoostRegressor(iterations=40, depth=6, **kw), "reg"),
            ("cb_nan", "CatBoost", catboost.CatBoostClassifier(iterations=40, depth=5, **kw), "nan")]


def export_catboost(model, x):
    import onnx
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.onnx")
        model.save_model(path, format="onnx")
        return onnx.load(path)


def hummingbird_models():
    """Hummingbird (microsoft/hummingbird) compiles trained trees into tensor programs and
    exports them through torch.onnx: a forest as GEMMs (`gemm`), as a gather-per-level walk
    (`tree_trav`) and as a perfect-tree walk (`perf_tree_trav`), standard ops only."""
    try:
        import hummingbird.ml  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        print("make_ml_zoo: hummingbird-ml or torch missing: no Hummingbird models", file=sys.stderr)
        return []
    from sklearn import ensemble as E
    out = []
    for strat in ("gemm", "tree_trav", "perf_tree_trav"):
        out.append(("hb_rf_" + strat, "Hummingbird " + strat,
                    (E.RandomForestClassifier(20, max_depth=7, random_state=0), strat), "multi"))
        out.append(("hb_gbr_" + strat, "Hummingbird " + strat,
                    (E.GradientBoostingRegressor(n_estimators=30, max_depth=4, random_state=0),
                     strat), "reg"))
    return out


def export_hummingbird(model_strat, x):
    import functools
    import hummingbird.ml as hb
    import torch
    model, strat = model_strat
    export = torch.onnx.export
    # the TorchScript exporter (torch 2.9 on defaults to dynamo, which hummingbird's
    # models do not pass)
    torch.onnx.export = functools.partial(export, dynamo=False) if "dynamo" in \
        torch.onnx.export.__code__.co_varnames else export
    try:
        return hb.convert(model, "onnx", x[:64], extra_config={"tree_implementation": strat}).model
    finally:
        torch.onnx.export = export


def save(outdir, name, arch, onx, x):
    import collections
    import numpy as np
    import onnx
    import onnxruntime as ort
    path = os.path.join(outdir, name + ".onnx")
    onnx.save(onx, path)
    if x.dtype == object:  # strings: as NumPy's <U, which .npy keeps without pickles
        x = x.astype(str)
    s = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    inp = s.get_inputs()[0].name
    outs = s.run(None, {inp: x})
    fin = "%s.in.%s.npy" % (name, inp)
    np.save(os.path.join(outdir, fin), x)
    entry = dict(name=name, arch=arch,
                 opset=max([o.version for o in onx.opset_import if o.domain in ("", "ai.onnx")] or [0]),
                 nodes=len(onx.graph.node),
                 ops=dict(collections.Counter(n.op_type for n in onx.graph.node)),
                 inputs=[dict(name=inp, file=fin, shape=list(x.shape), dtype=str(x.dtype))],
                 outputs=[])
    for o, v in zip(s.get_outputs(), outs):
        if isinstance(v, list) and v and isinstance(v[0], dict):
            # a ZipMap's list of {label: probability}: the [N, C] table it zips
            v = np.array([[d[k] for k in v[0]] for d in v], np.float32)
        if v.dtype == object:  # strings: as NumPy's <U, which .npy keeps without pickles
            v = v.astype(str)
        f = "%s.ref.%s.npy" % (name, o.name)
        np.save(os.path.join(outdir, f), v)
        numeric = v.dtype.kind not in "US"
        entry["outputs"].append(dict(name=o.name, file=f, shape=list(v.shape), dtype=str(v.dtype),
                                     max_abs=float(np.abs(v.astype(np.float64)).max())
                                     if v.size and numeric else 0.0))
    return entry


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "ml_zoo"))
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    want = set(a.only.split(",")) if a.only else None
    os.makedirs(a.out, exist_ok=True)
    from onnxmltools.convert.common.data_types import FloatTensorType
    sets = data()
    entries = []
    for name, arch, model, d in sklearn_models():
        if want and name not in want:
            continue
        x, y = sets[d.replace("_x", "")]
        model.fit(x) if d.endswith("_x") else model.fit(x, y)
        onx = export_sklearn(model, x)
        entries.append(save(a.out, name, arch, onx, x[:64].reshape(-1, 1) if x.ndim == 1 else x[:64]))
        print(name, sorted(entries[-1]["ops"]))
    for name, arch, model, d, convert in boosted_models():
        if want and name not in want:
            continue
        x, y = sets[d]
        model.fit(x, y)
        types = [("X", FloatTensorType([None, x.shape[1]]))]
        try:
            onx = convert(model, initial_types=types, target_opset=15, zipmap=False)
        except TypeError:
            onx = convert(model, initial_types=types, target_opset=15)
        entries.append(save(a.out, name, arch, onx, x[:64]))
        print(name, sorted(entries[-1]["ops"]))
    for name, arch, model, d in catboost_models() + hummingbird_models():
        if want and name not in want:
            continue
        x, y = sets[d]
        (model[0] if isinstance(model, tuple) else model).fit(x, y)
        export = export_hummingbird if isinstance(model, tuple) else export_catboost
        entries.append(save(a.out, name, arch, export(model, x), x[:64]))
        print(name, sorted(entries[-1]["ops"]))
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(dict(models=entries), f, indent=1)


if __name__ == "__main__":
    main()
