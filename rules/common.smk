# Paths and the experiment grid. Every target path is built here from the config, so `all` and
# each table rule list exactly the jobs the paper needs.
import math

RESULTS = config["results"]
DATASETS = config["datasets"]
METHODS = config["methods"]
GPUS = config["gpus_per_job"]


wildcard_constraints:
    dataset="|".join(DATASETS),
    method="cohen|smoothadv|macer|uniform",
    mode="fs|ds",
    sigma=r"[0-9.]+",
    k=r"[0-9]+",
    n=r"[0-9]+",


def k_grid(dataset):
    """Algorithm 1's snapshot steps K for a dataset (Appendix H grids differ per dataset)."""
    return sorted(DATASETS[dataset].get("k", config["optimize_sigma"]["k"]))


def fmt(value):
    """The spelling of a scale in paths: 0.12, 0.25, 1."""
    return f"{value:g}"


def model_dir(dataset, method, mode, sigma):
    return f"{RESULTS}/{dataset}/{method}/{mode}/sigma{fmt(float(sigma))}"


def noise_of(method):
    return "uniform" if method == "uniform" else "gaussian"


def smoothing_scale(method, sigma):
    """The scale handed to the library: σ for Gaussian; the half-width λ for uniform noise."""
    sigma = float(sigma)
    if method == "uniform" and config["uniform"]["convention"] == "yang_std":
        return sigma * math.sqrt(3.0)
    return sigma


def sigmas_of(dataset, method):
    key = "uniform_sigmas" if method == "uniform" else "sigmas"
    return DATASETS[dataset].get(key, [])


def published(dataset):
    return DATASETS[dataset]["source"] == "published"


def test_subset(dataset):
    """Cohen's --skip/--max flags for the certified test inputs."""
    spec = DATASETS[dataset]
    flags = f"--skip {spec.get('test_skip', 1)}"
    if spec.get("test_max"):
        flags += f" --max {spec['test_max']}"
    return flags


def fixed_logs(dataset, method):
    """Fixed-σ certification of fixed-σ-trained models: the Method rows."""
    return [
        f"{model_dir(dataset, method, 'fs', s)}/certify_fixed.tsv"
        for s in sigmas_of(dataset, method)
    ]


def ds_logs(dataset, method, mode, ks=None):
    """Memory-certified data-dependent logs: Method-DS (mode fs) and Method-DS² (mode ds)."""
    return [
        f"{model_dir(dataset, method, mode, s)}/memory_K{k}.tsv"
        for s in sigmas_of(dataset, method)
        for k in (ks or k_grid(dataset))
    ]


def grid_logs(dataset, method):
    """Appendix B: the grid-search baseline at Algorithm 1's evaluation budget."""
    return [
        f"{model_dir(dataset, method, 'fs', s)}/memory_grid_n{n}.tsv"
        for s in sigmas_of(dataset, method)
        for n in config["grid_search"]["n"]
    ]


def l2_datasets():
    return [d for d in DATASETS if DATASETS[d].get("sigmas")]


def l1_datasets():
    if not config["uniform"]["enabled"]:
        return []
    return [d for d in DATASETS if DATASETS[d].get("uniform_sigmas")]


def method_logs(method):
    """Everything one of Tables 1–3 (or Appendix H) reads, over all configured datasets."""
    logs = []
    for dataset in l2_datasets():
        logs += fixed_logs(dataset, method)
        logs += ds_logs(dataset, method, "fs")
        logs += ds_logs(dataset, method, "ds")
    return logs


def uniform_logs():
    logs = []
    for dataset in l1_datasets():
        logs += fixed_logs(dataset, "uniform")
        logs += ds_logs(dataset, "uniform", "fs")
    return logs


TABLE_OF_METHOD = {"cohen": "table1", "smoothadv": "table2", "macer": "table3"}


def all_tables():
    tables = [f"{RESULTS}/tables/{TABLE_OF_METHOD[m]}.csv" for m in METHODS]
    tables += [f"{RESULTS}/tables/appendix_h_{m}.csv" for m in METHODS]
    if l1_datasets():
        tables.append(f"{RESULTS}/tables/table4.csv")
    if config["grid_search"]["enabled"]:
        tables.append(f"{RESULTS}/tables/appendix_b.csv")
    tables += [f"{RESULTS}/tables/appendix_f.csv", f"{RESULTS}/tables/memory_summary.csv"]
    return tables


def all_figures():
    figures = []
    for dataset in l2_datasets():
        for method in METHODS:
            figures.append(f"{RESULTS}/figures/certified_{method}_{dataset}.png")
            figures.append(f"{RESULTS}/figures/ksweep_{method}_{dataset}.png")
        figures += [
            f"{RESULTS}/figures/sigma_examples_{dataset}.png",
            f"{RESULTS}/figures/sigma_histogram_{dataset}.png",
            f"{RESULTS}/figures/pa_ecdf_{dataset}.png",
            f"{RESULTS}/figures/easy_hard_{dataset}.png",
        ]
    return figures
