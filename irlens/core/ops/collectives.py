"""Collectives of the joint-graph parallel path (torch's functional collectives), attrs by their
schema names. They have no float64 meaning: their values depend on the other ranks."""
from __future__ import annotations

from irlens.core.ops.core import COLLECTIVE, Attr, declare

_GROUP = Attr("any")  # a group name (str) or a process group
all_gather = declare("all_gather", COLLECTIVE, "x", group_size=Attr("int"), group_name=_GROUP,
                     doc="every rank's x, concatenated along dim 0")
reduce_scatter = declare("reduce_scatter", COLLECTIVE, "x", reduce_op=Attr("str"), group_size=Attr("int"),
                         group_name=_GROUP, doc="x reduced over the ranks, this rank's dim-0 shard")
all_reduce = declare("all_reduce", COLLECTIVE, "x", reduce_op=Attr("str"), group_name=_GROUP)
all_to_all = declare("all_to_all", COLLECTIVE, "x", output_split_sizes=Attr("any", None),
                     input_split_sizes=Attr("any", None), group_name=_GROUP)
wait = declare("wait", COLLECTIVE, "x", doc="the collective's result, once it has arrived")
