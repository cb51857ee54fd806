"""What keeps the compilers' persistent caches from costing a run (upkeep: their root and cap, the
disk, an error as one warning, unfinished builds removed), below every layer that touches a cache:
an nvFuser backend's worker copies (irlens.backends.thunder.kernel_db), a worker's cleanup after a
killed compile (irlens.runtime.isolation), the bench's caches (irlens.bench.compile_caches, which
imports that backend's database and so cannot sit here: the packages would import each other)."""
