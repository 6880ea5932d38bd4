"""Errors a user can act on: each names the file or value that is wrong."""


class DDRSError(Exception):
    """Base class for errors the command line reports without a traceback."""


class CheckpointError(DDRSError):
    """A checkpoint is unreadable, corrupt, or for another architecture or dataset."""


class LogFormatError(DDRSError):
    """A certification or σ log does not follow the file contract of docs/architecture.md."""


class DataFormatError(DDRSError):
    """A dataset file under the data root is unreadable."""


class FetchError(DDRSError):
    """A published log could not be brought into the local cache intact (network, mirror or checksum)."""
