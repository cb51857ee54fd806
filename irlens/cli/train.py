"""`irlens train`: the joint-graph parallel training path; its options are irlens.parallel.train's."""
from __future__ import annotations

from irlens.cli.command import guarded
from irlens.errors import UsageError

HELP = "the joint-graph parallel training path (irlens train --help)"


def add_arguments(t) -> None:
    from irlens.parallel import train

    t.description = train.__doc__.split("\n\n")[0]
    train.add_train_arguments(t)


@guarded
def run(args) -> int:
    from irlens.parallel.train import train_main

    try:
        return train_main(args)
    except (ValueError, KeyError) as e:  # a bad model, mesh or pass list
        raise UsageError(str(e).strip("'\"")) from None
