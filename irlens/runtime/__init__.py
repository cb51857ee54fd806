"""The process and device machinery every run stands on: worker processes (isolation), turns on the
device between workers (gpu_turns), a call's stage and waits told to its parent (call_progress), and
device and host timing (timing). It imports nothing from the orchestration above it."""
