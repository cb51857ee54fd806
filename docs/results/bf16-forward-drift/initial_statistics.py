"""The zoo's eval-mode models as these scripts measured them: the zoo now draws its eval-mode
BatchNorms' running statistics (irlens/workloads/zoo/entry.py, `trained_statistics`); the scripts here
study the statistics a model is built with (mean 0, variance 1), so they put those back."""
import torch


def initial_statistics(model: torch.nn.Module) -> torch.nn.Module:
    for bn in model.modules():
        if isinstance(bn, torch.nn.modules.batchnorm._BatchNorm):
            bn.reset_running_stats()
    return model
