"""The check that a graph's nodes record the outputs their ops' rules infer (irlens.conformance.metadata),
shared by the tests over the built-in workloads' acquisitions and those over Dynamo's converters."""
from __future__ import annotations

from irlens.conformance.metadata import check_metadata

# the one kind of node left uninferred: an op whose dtype comes from a literal (JAX's 1.0 / 512.0
# in a gradient), which has none in the common view
LITERALS_ONLY = "comes from a literal"


def assert_outputs_inferred(graph):
    """No disagreement, nothing uninferred but literals' dtypes, and something checked."""
    found = check_metadata(graph)
    assert found.ok, f"{graph.stage} ({graph.level}):\n" + "\n".join(map(str, found.disagreements))
    others = {n: why for n, why in found.not_inferred.items() if LITERALS_ONLY not in why}
    assert not others, f"{graph.stage} ({graph.level}): not inferred: {others}"
    assert found.checked > 0
    return found
