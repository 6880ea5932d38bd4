# Paths and the experiment grid. Every target path is built here from the config, so `all` and
# each table rule list exactly the jobs the paper needs.
import math

RESULTS = config["results"]
DATASETS = config["datasets"]
METHODS = config["methods"]
GPUS = config["gpus_per_job"]
THREADS = config["threads_per_job"]


wildcard_constraints:
    dataset="|".join(DATASETS),
    method="|".join({*METHODS, config["grid_search"]["method"], "uniform"}),
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
    """The σ₀ grid of a (dataset, method); a published dataset has only the models it names."""
    spec = DATASETS[dataset]
    sigmas = spec.get("uniform_sigmas" if method == "uniform" else "sigmas", [])
    if spec["source"] == "published":
        named = spec.get("checkpoints", {}).get(method, {})
        return [s for s in sigmas if fmt(s) in named]
    return sigmas


def published(dataset):
    return DATASETS[dataset]["source"] == "published"


def test_subset(dataset):
    """Cohen's --skip/--max flags for the certified test inputs."""
    spec = DATASETS[dataset]
    flags = f"--skip {spec.get('test_skip', 1)}"
    if spec.get("test_max"):
        flags += f" --max {spec['test_max']}"
    return flags


def benchmark(stage, dataset, method, mode, sigma, suffix=""):
    return f"{RESULTS}/benchmarks/{stage}/{dataset}_{method}_{mode}_sigma{fmt(float(sigma))}{suffix}.tsv"


def fixed_records(dataset, method):
    """Fixed-σ certification of fixed-σ-trained models: the Method rows."""
    return [
        dict(
            log=f"{model_dir(dataset, method, 'fs', s)}/certify_fixed.tsv",
            dataset=dataset,
            method=method,
            train_mode="fs",
            certify_mode="fs",
            sigma0=s,
        )
        for s in sigmas_of(dataset, method)
    ]


def ds_records(dataset, method, mode):
    """Memory-certified data-dependent logs: Method-DS (mode fs) and Method-DS² (mode ds)."""
    return [
        dict(
            log=f"{model_dir(dataset, method, mode, s)}/memory_K{k}.tsv",
            dataset=dataset,
            method=method,
            train_mode=mode,
            certify_mode="ds",
            sigma0=s,
            K=k,
            benchmarks=(
                benchmark("optimize_sigma", dataset, method, mode, s),
                benchmark("memory", dataset, method, mode, s, f"_K{k}"),
            ),
        )
        for s in sigmas_of(dataset, method)
        for k in k_grid(dataset)
    ]


def grid_records(dataset, method):
    """Appendix B: the grid-search baseline at Algorithm 1's evaluation budget."""
    return [
        dict(
            log=f"{model_dir(dataset, method, 'fs', s)}/memory_grid_n{n}.tsv",
            dataset=dataset,
            method=method,
            train_mode="fs",
            certify_mode="gds",
            sigma0=s,
            samples=n,
        )
        for s in sigmas_of(dataset, method)
        for n in config["grid_search"]["n"]
    ]


def l2_datasets():
    return [d for d in DATASETS if DATASETS[d].get("sigmas")]


def l1_datasets():
    if not config["uniform"]["enabled"]:
        return []
    return [d for d in DATASETS if DATASETS[d].get("uniform_sigmas")]


def method_records(method):
    """Everything one of Tables 1–3 (or Appendix H) reads, over all configured datasets."""
    records = []
    for dataset in l2_datasets():
        records += fixed_records(dataset, method)
        records += ds_records(dataset, method, "fs")
        records += ds_records(dataset, method, "ds")
    return records


def uniform_records():
    """Table 4: YANG (fixed λ) and YANG-DS (λ*ₓ from Algorithm 1, memory-certified)."""
    records = []
    for dataset in l1_datasets():
        records += fixed_records(dataset, "uniform")
        records += ds_records(dataset, "uniform", "fs")
    return records


def grid_datasets():
    """The datasets of the Appendix-B comparison (all ℓ2 datasets unless the config names some)."""
    if not config["grid_search"]["enabled"]:
        return []
    chosen = config["grid_search"].get("datasets")
    return [d for d in l2_datasets() if chosen is None or d in chosen]


def appendix_b_records():
    method = config["grid_search"]["method"]
    records = []
    for dataset in grid_datasets():
        records += fixed_records(dataset, method)
        records += grid_records(dataset, method)
        records += ds_records(dataset, method, "fs")
    return records


def all_records():
    """Every certification log of the configured experiment grid."""
    records = [
        r for method in METHODS for r in method_records(method)
    ] + uniform_records()
    method = config["grid_search"]["method"]
    records += [r for d in grid_datasets() for r in grid_records(d, method)]
    return records


def logs_of(records):
    return [record["log"] for record in records]


def benchmarks_of(records):
    return sorted({path for record in records for path in record.get("benchmarks", ())})


def radii_of(key):
    """The radius grid of each configured dataset (``radii`` for ℓ2, ``l1_radii`` for ℓ1)."""
    return {d: spec[key] for d, spec in DATASETS.items() if key in spec}


TABLE_OF_METHOD = {"cohen": "table1", "smoothadv": "table2", "macer": "table3"}


def all_tables():
    tables = [f"{RESULTS}/tables/{TABLE_OF_METHOD[m]}.csv" for m in METHODS]
    tables += [f"{RESULTS}/tables/appendix_h_{m}.csv" for m in METHODS]
    if l1_datasets():
        tables.append(f"{RESULTS}/tables/table4.csv")
    if grid_datasets():
        tables.append(f"{RESULTS}/tables/appendix_b.csv")
    tables += [
        f"{RESULTS}/tables/appendix_f.csv",
        f"{RESULTS}/tables/memory_summary.csv",
    ]
    return tables


def all_figures():
    figures = []
    for dataset in l2_datasets():
        for method in (m for m in METHODS if sigmas_of(dataset, m)):
            figures.append(f"{RESULTS}/figures/certified_{method}_{dataset}.png")
            figures.append(f"{RESULTS}/figures/ksweep_{method}_{dataset}.png")
        figures += [
            f"{RESULTS}/figures/sigma_examples_{dataset}.png",
            f"{RESULTS}/figures/sigma_histogram_{dataset}.png",
            f"{RESULTS}/figures/pa_ecdf_{dataset}.png",
            f"{RESULTS}/figures/easy_hard_{dataset}.png",
        ]
    return figures


def showcase(dataset):
    """The model the single-setting figures show: the first method at the middle σ₀, largest K."""
    method = METHODS[0]
    sigmas = sigmas_of(dataset, method)
    return method, sigmas[len(sigmas) // 2], k_grid(dataset)[-1]


def showcase_records(dataset):
    """Method, Method-DS and Method-DS² of every method at the showcase σ₀ and K (p̲A figures)."""
    _, sigma, k = showcase(dataset)
    records = []
    for method in METHODS:
        for record in method_records(method):
            if (
                record["dataset"] == dataset
                and record["sigma0"] == sigma
                and record.get("K", k) == k
            ):
                records.append(record)
    return records


# --- training ---

TRAIN = config["train"]


def train_hyperparameters(wildcards):
    """The paper's hyper-parameters for `ddrs train`, from the config's `train` section."""
    ds, adv, macer = TRAIN["ds"], TRAIN["smoothadv"], TRAIN["macer"]
    flags = [
        f"--lr {TRAIN['lr']} --momentum {TRAIN['momentum']}",
        f"--weight-decay {TRAIN['weight_decay']}",
        f"--lr-step {TRAIN['lr_step']} --lr-gamma {TRAIN['lr_gamma']}",
        f"--batch-size {TRAIN['batch_size']}",
        f"--smoothadv-steps {adv['steps']} --smoothadv-epsilon {adv['epsilon']}",
        f"--smoothadv-m {adv['m']} --smoothadv-warmup {adv['warmup_epochs']}",
        f"--macer-m {macer['m']} --macer-lambda {macer['lambda']}",
        f"--macer-gamma {macer['gamma']} --macer-beta {macer['beta']}",
    ]
    if wildcards.mode == "ds":
        flags.append(
            f"--warmup-epochs {0 if published(wildcards.dataset) else ds['warmup_epochs']} "
            f"--k {ds['k']} --n {ds['n']} --sigma-lr {ds['lr']} --min-sigma {ds['min_sigma']}"
        )
    return " ".join(flags)


def data_marker(wildcards):
    """The prepare_data output every job reading a dataset waits for."""
    return f"{RESULTS}/data/{wildcards.dataset}.json"


def train_inputs(wildcards):
    """The dataset; DS² on a published-checkpoint dataset also fine-tunes the imported model."""
    inputs = {"data": data_marker(wildcards)}
    if published(wildcards.dataset):
        run = model_dir(wildcards.dataset, wildcards.method, "fs", wildcards.sigma)
        inputs["init"] = f"{run}/model.pt"
    return inputs


def train_epochs(wildcards):
    spec = DATASETS[wildcards.dataset]
    return spec["finetune_epochs"] if published(wildcards.dataset) else TRAIN["epochs"]


def train_args(wildcards, input):
    """Everything `ddrs train` needs for one (dataset, method, mode, σ) model."""
    init = f"--init {input.init}" if "init" in input.keys() else ""
    return (
        f"--dataset {wildcards.dataset} --data-root {config['data_root']} "
        f"--arch {DATASETS[wildcards.dataset]['arch']} --method {wildcards.method} "
        f"--train-mode {wildcards.mode} --sigma {smoothing_scale(wildcards.method, wildcards.sigma)} "
        f"--epochs {train_epochs(wildcards)} {train_hyperparameters(wildcards)} {init} "
        f"--seed {config['seed']} --device {config['device']}"
    )


# --- certification ---

CERT = config["certify"]
OPT = config["optimize_sigma"]
GRID = config["grid_search"]
MODEL = f"{RESULTS}/{{dataset}}/{{method}}/{{mode}}/sigma{{sigma}}/model.pt"
RUN = f"{RESULTS}/{{dataset}}/{{method}}/{{mode}}/sigma{{sigma}}"
JOB = "{dataset}_{method}_{mode}_sigma{sigma}"


def job_args(wildcards):
    """Flags every certification-side job shares: data, noise, test subset, seed, device."""
    return (
        f"--dataset {wildcards.dataset} --data-root {config['data_root']} "
        f"--noise {noise_of(wildcards.method)} {test_subset(wildcards.dataset)} "
        f"--seed {config['seed']} --device {config['device']} --precision {config['precision']}"
    )


def certify_args(wildcards):
    """Cohen's CERTIFY statistics (n0, n, α) and the forward batch size."""
    return (
        f"{job_args(wildcards)} --n0 {CERT['n0']} --n {CERT['n']} "
        f"--alpha {CERT['alpha']} --batch {CERT['batch']}"
    )


def fixed_certify_args(wildcards):
    return f"{certify_args(wildcards)} --scale {smoothing_scale(wildcards.method, wildcards.sigma)}"


def optimize_args(wildcards):
    """Algorithm 1: σ₀ = the training σ, snapshots at every K of the dataset's grid."""
    return (
        f"{job_args(wildcards)} --sigma0 {smoothing_scale(wildcards.method, wildcards.sigma)} "
        f"--k {' '.join(str(k) for k in k_grid(wildcards.dataset))} --n {OPT['n']} "
        f"--lr {OPT['lr']} --n0 {OPT['n0']} --min-sigma {OPT['min_sigma']} --batch {OPT['batch']}"
    )


def grid_search_args(wildcards):
    """Appendix B: a σ grid at Algorithm 1's evaluation budget, n draws per grid point."""
    return (
        f"{job_args(wildcards)} --sigma0 {smoothing_scale(wildcards.method, wildcards.sigma)} "
        f"--grid-search --grid-n {wildcards.n} --grid-budget {GRID['budget']} "
        f"--grid-min {GRID['low']} --grid-max {GRID['high']} "
        f"--n0 {OPT['n0']} --batch {OPT['batch']}"
    )


def sigma_column(wildcards):
    if wildcards.source == "K":
        return f"sigma_K{wildcards.value}"
    return f"sigma_grid_n{wildcards.value}"


def memory_args(wildcards):
    return (
        f"--dataset {wildcards.dataset} --data-root {config['data_root']} "
        f"--seed {config['seed']}"
    )


def sigma_log(wc):
    """Where σ*ₓ comes from: Algorithm 1's snapshots (K) or the grid search (grid_n)."""
    name = "sigma_opt.tsv" if wc.source == "K" else f"sigma_grid_n{wc.value}.tsv"
    return f"{model_dir(wc.dataset, wc.method, wc.mode, wc.sigma)}/{name}"


def certify_runtime(wildcards):
    return 60 * 12 if wildcards.dataset == "imagenet" else 60


# --- tables and figures ---

TABLE_METHOD = {v: k for k, v in TABLE_OF_METHOD.items()}


def table_records(wildcards):
    if wildcards.table == "table4":
        return uniform_records()
    return method_records(TABLE_METHOD[wildcards.table])


def method_dataset_records(wildcards):
    return [
        r for r in method_records(wildcards.method) if r["dataset"] == wildcards.dataset
    ]


def k_sweep_records(wildcards):
    """Figure 7: Method-DS² at the smallest σ₀, one line per K (the paper's CIFAR-10 panel)."""
    sigma = sigmas_of(wildcards.dataset, wildcards.method)[0]
    return [
        r
        for r in ds_records(wildcards.dataset, wildcards.method, "ds")
        if r["sigma0"] == sigma
    ]


def showcase_run(dataset):
    method, sigma, _ = showcase(dataset)
    return model_dir(dataset, method, "fs", sigma)
