"""Load a target model the one safe, quiet way: never remote code, no per-weight progress bar."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def load_target(model_dir: Path | str, dtype: torch.dtype, tp: bool = False) -> Any:
    """`AutoModelForCausalLM` in eval mode. trust_remote_code is always False: a model repo is untrusted.

    tp=True (under torchrun): transformers' own tensor parallelism (`tp_plan="auto"`) shards the target
    over the ranks' GPUs by the model's published plan; nothing is sharded by hand here. Typed Any: a
    transformers PreTrainedModel, whose attributes depend on the architecture."""
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # "Loading weights 0/75" in every stage's output helps nobody
    extra: dict = {}
    if tp:
        try:  # transformers >= 5.17 takes the plan in a DistributedConfig (the bare `tp_plan=` kwarg is deprecated)
            from transformers.distributed import DistributedConfig

            extra["distributed_config"] = DistributedConfig(tp_plan="auto")
        except ImportError:
            extra["tp_plan"] = "auto"
    return AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, trust_remote_code=False, **extra).eval()
