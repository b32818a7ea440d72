"""qkv models in plain PyTorch: rebuild a qkv model folder with torch.nn, train it under torchrun
(DistributedDataParallel), and write qkv folders back. Standard library and torch >= 1.13 only."""


class QkvError(Exception):
    """A problem the user can fix (bad file, bad flag): printed as one line, exit status 1."""
