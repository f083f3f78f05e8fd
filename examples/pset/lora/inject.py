"""Adding LoRA adapters to selected linear layers of a model, and related bookkeeping.

Our own re-implementation for the ResearchCodeBench Hub examples.
"""

from torch import nn

from lora_layer import LoRALinear


def inject_lora(model: nn.Module, target_names: set[str], r: int, alpha: float) -> nn.Module:
    """Freeze ``model`` and wrap every ``nn.Linear`` whose attribute name is in ``target_names``.

    Returns the same model object, modified in place.
    """
    # <paper2code name="inject adapters">
    # <paper2code name="freeze the whole model">
    for param in model.parameters():
        param.requires_grad_(False)
    # </paper2code name="freeze the whole model">
    # <paper2code name="wrap target linear layers">
    for module in list(model.modules()):
        for child_name, child in list(module.named_children()):
            # <paper2code name="select targets">
            if isinstance(child, nn.Linear) and child_name in target_names:
                module.add_module(child_name, LoRALinear(child, r, alpha))
            # </paper2code name="select targets">
    # </paper2code name="wrap target linear layers">
    return model
    # </paper2code name="inject adapters">


def trainable_parameter_count(model: nn.Module) -> int:
    """Number of scalar parameters that receive gradients."""
    # <paper2code name="count trainable parameters">
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
    # </paper2code name="count trainable parameters">


def set_merged(model: nn.Module, merged: bool) -> None:
    """Merge (True) or unmerge (False) every LoRA layer in ``model``."""
    # <paper2code name="merge or unmerge all adapters">
    for module in model.modules():
        if isinstance(module, LoRALinear):
            if merged:
                module.merge()
            else:
                module.unmerge()
    # </paper2code name="merge or unmerge all adapters">
