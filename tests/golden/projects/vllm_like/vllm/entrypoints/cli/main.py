"""The fixture project's `vllm serve` entry point: its presence is what makes a revision launch
with `vllm serve` (profiles/vllm.toml [launch] since_files)."""


def main() -> int:
    return 0
