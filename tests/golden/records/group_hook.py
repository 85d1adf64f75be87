"""Fixture for kverr's records goldens: an arg-group validator module in the shape of
`arg_groups/*.py` (functions over a resolving view of the launch arguments). Not real code."""

import logging
from typing import Any

from launcher.views import platform, resolving_view

logger = logging.getLogger(__name__)


def handle_fast_decode(server_args: Any) -> None:
    """Validate --enable-fast-decode preconditions."""
    cfg = resolving_view(server_args)
    if not cfg.enable_fast_decode:
        return

    # Fast decode writes straight into the page table, so a shared tree cannot see it.
    if cfg.enable_shared_tree:
        raise ValueError(
            "--enable-fast-decode is incompatible with --enable-shared-tree: "
            "fast decode bypasses the shared tree's page accounting."
        )
    if cfg.decode_chunk != -1:
        raise ValueError("--enable-fast-decode requires --decode-chunk=-1.")
    if not platform().is_accelerated:
        raise RuntimeError("--enable-fast-decode requires an accelerated platform (GPU).")
    # The fused kernel exists for these widths only.
    if cfg.head_width not in (64, 128):
        raise ValueError(
            f"--enable-fast-decode supports --head-width 64 or 128, got {cfg.head_width}."
        )
    if cfg.enable_warm_start:
        raise ValueError(
            "--enable-fast-decode is incompatible with --enable-warm-start: "
            "warm start restores pages the fast path never wrote."
        )


def handle_envelope(server_args: Any) -> None:
    cfg = resolving_view(server_args)
    if cfg.envelope_mode == "strict":
        assert cfg.envelope_size in (None, 1), (
            "--envelope-mode strict supports --envelope-size in {None, 1} only; got "
            f"--envelope-size={cfg.envelope_size!r}."
        )
    elif cfg.envelope_mode == "loose":
        logger.info("Envelope mode loose: pages may be padded to %s tokens.", cfg.envelope_size)
    else:
        raise ValueError(f"Unknown --envelope-mode {cfg.envelope_mode!r}.")
