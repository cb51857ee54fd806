"""Thunder's backends, thunder+torchcompile and nvfuser (backend.py), their fusion regions' recorders
(recorders.py) and nvFuser's readers."""
