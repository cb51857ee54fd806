"""irlens: one workload through torch.compile/Dynamo, Thunder and JAX, side by side."""
__version__ = "0.1.0"
