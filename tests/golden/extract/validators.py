"""Fixture: a small server-args validator in the shape kverr reads (written for kverr's tests).

The case_* functions build an argument object and run one check that fails.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import field

logger = logging.getLogger(__name__)

CACHE_DTYPES = ["auto", "fp8", "fp4"]
SPARSE_BACKENDS = {"flash", "tile"}


def resolving_view(args):
    return args


@dataclasses.dataclass
class ServerArgs:
    """The arguments of the toy server."""

    tp_size: int = 1
    cache_dtype: str = "auto"
    enable_sparse: bool = False
    sparse_backend: str | None = None
    mem_fraction: float = field(default=0.9, metadata={"help": "Fraction of memory to use."})
    chunk_size: int = -1

    def _resolved(self):
        return self

    def _handle_cache(self):
        """Check the cache dtype against the parallel layout."""
        cfg = self._resolved()
        if cfg.cache_dtype == "auto":
            return

        # FP4 caches split heads across ranks,
        # so they need an even tensor-parallel size.
        if cfg.cache_dtype == "fp4" and self.tp_size % 2:
            raise ValueError(
                f"--cache-dtype fp4 needs an even --tp-size, got {self.tp_size}. "
                f"Choose one of {CACHE_DTYPES} or change --tp-size."
            )
        if cfg.cache_dtype not in CACHE_DTYPES:
            raise ValueError(
                "Unknown --cache-dtype %r; expected one of %s." % (cfg.cache_dtype, CACHE_DTYPES)
            )

    def _handle_memory(self):
        if not 0 < self.mem_fraction <= 1:  # a fraction, not a percentage
            raise ValueError(
                "--mem-fraction must be in (0, 1], got {:.2f}".format(self.mem_fraction)
            )
        elif self.mem_fraction < 0.5:
            logger.warning(
                "--mem-fraction=%s leaves most of the GPU idle.", self.mem_fraction
            )


def handle_sparse(server_args):
    """Sparse attention needs an explicit backend."""
    cfg = resolving_view(server_args)
    if not cfg.enable_sparse:
        return
    if cfg.sparse_backend is None:
        reason = "no backend was given"
    else:
        reason = f"backend {cfg.sparse_backend!r} is unknown"
    if cfg.sparse_backend not in SPARSE_BACKENDS:
        msg = "--enable-sparse: " + reason
        msg += f" (supported: {sorted(SPARSE_BACKENDS)})"
        raise ValueError(msg)


def handle_chunk(server_args):
    assert server_args.chunk_size == -1 or server_args.chunk_size >= 64, (
        f"--chunk-size must be -1 or at least 64, got {server_args.chunk_size}"
    )
    if server_args.chunk_size == -1:
        logger.info("Chunked prefill is disabled.")


def case_fp4_odd_tp():
    ServerArgs(tp_size=3, cache_dtype="fp4")._handle_cache()


def case_unknown_dtype():
    ServerArgs(cache_dtype="int3")._handle_cache()


def case_memory_range():
    ServerArgs(mem_fraction=1.5)._handle_memory()


def case_memory_low():
    ServerArgs(mem_fraction=0.25)._handle_memory()


def case_sparse_missing():
    handle_sparse(ServerArgs(enable_sparse=True))


def case_sparse_unknown():
    handle_sparse(ServerArgs(enable_sparse=True, sparse_backend="dense"))


def case_chunk_small():
    handle_chunk(ServerArgs(chunk_size=16))


def case_chunk_disabled():
    handle_chunk(ServerArgs(chunk_size=-1))
