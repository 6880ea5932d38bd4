"""What every process of a test's Snakemake run needs patched (tests/miniature.py, tests/tiny.py).

On ``PYTHONPATH`` of the run, so its jobs (``ddrs`` commands and workflow scripts) import it at
start-up. With ``DDRS_WORKFLOW_SITE`` naming the JSON file the test wrote, module attributes are set
right after their modules first execute, as the in-process tests of tests/fixtures_archives.py and
tests/killed_job.py patch them; each patch only where the file has its key:

* ``cifar10``: ``torchvision.datasets.cifar.CIFAR10``'s ``train_list``, ``test_list`` and ``meta``,
  the md5 sums of the CIFAR-10 archive written in torchvision's format (no file can match the real sums);
* ``imagenet``: ``ddrs.data.torchvision_sets.IMAGENET_CLASSES`` and ``IMAGENET_SIZE``, the class
  folders of the ImageNet ``ImageFolder`` written and the side of the crop the networks see, which
  the dataset registry reads as ImageNet's class count and input shape when it is built;
* ``pause``: ``ddrs.logs.certification_log.LogWriter.write``, so that the first certification log
  of the run to reach ``rows`` rows (``certify_*.tsv``) holds its job there for ``seconds``, having
  named itself in the ``marker`` file: a test kills the run at that point, as a lost node would.

Nothing is imported early: a process that never reads the data never imports torchvision.
"""

from __future__ import annotations

import importlib.abc
import json
import os
import sys
import time


def _cifar10(module, data):
    for attribute in ("train_list", "test_list", "meta"):
        setattr(module.CIFAR10, attribute, data["cifar10"][attribute])


def _imagenet(module, data):
    module.IMAGENET_CLASSES = data["imagenet"]["classes"]
    module.IMAGENET_SIZE = data["imagenet"]["size"]


def _pause(module, data):
    rows, seconds, marker = (data["pause"][key] for key in ("rows", "seconds", "marker"))
    write = module.LogWriter.write

    def write_then_pause(self, row):
        write(self, row)
        if not (self.path.name.startswith("certify_") and len(self.done) == rows):
            return
        try:  # the run's first log at ``rows`` rows, and only it, pauses
            with open(marker, "x") as file:
                file.write(os.path.abspath(self.partial))
        except FileExistsError:
            return
        time.sleep(seconds)

    module.LogWriter.write = write_then_pause


#: module → (the patch, the key of the data file it needs: no patch where the test wrote no such key)
_PATCHES = {
    "torchvision.datasets.cifar": (_cifar10, "cifar10"),
    "ddrs.data.torchvision_sets": (_imagenet, "imagenet"),
    "ddrs.logs.certification_log": (_pause, "pause"),
}


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Finds the patched modules through the other finders and patches each once it has executed."""

    def __init__(self, data):
        self.data = data

    def find_spec(self, name, path, target=None):
        if name not in _PATCHES or _PATCHES[name][1] not in self.data:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            _PATCHES[name][0](module, self.data)

        spec.loader.exec_module = exec_module
        return spec


if _SITE := os.environ.get("DDRS_WORKFLOW_SITE"):
    with open(_SITE) as file:
        sys.meta_path.insert(0, _PatchAfterImport(json.load(file)))
