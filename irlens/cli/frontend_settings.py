"""The frontends' settings (`Frontend.settings`, the CLI's `--<frontend>-<name>`) as the parser
offers them, read from each frontend's source rather than by importing it: a frontend imports
torch, and `irlens compare --help` or a bad argument must not wait for it.

A frontend class whose `settings` are `Setting(<literal name>, <literal metavar>, <literal help>,
apply)` is read as written; any other form (settings computed, or inherited from another class
than `Frontend`) imports the frontend instead, slower but the same. Applying a value always uses
the imported `Setting` (its `apply` checks the value).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import irlens
from irlens import names


@dataclass(frozen=True)
class Declared:
    frontend: str
    name: str
    metavar: str
    help: str

    @property
    def option(self) -> str:
        return f"--{self.frontend}-{self.name}"

    @property
    def dest(self) -> str:
        return f"{self.frontend}_{self.name}"


def declared() -> list[Declared]:
    """Every frontend's settings, in the frontends' order (irlens.names.FRONTENDS)."""
    found = []
    for frontend, module in names.FRONTENDS.items():
        literal = read_source(frontend, source_of(module).read_text())
        found += imported(frontend) if literal is None else literal
    return found


def source_of(module: str) -> Path:
    path = Path(irlens.__file__).parent.joinpath(*module.split(".")[1:])
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def read_source(frontend: str, source: str) -> list[Declared] | None:
    """The settings of the class named `frontend` in `source`; None where they are not written as literals."""
    for cls in ast.walk(ast.parse(source)):
        if not isinstance(cls, ast.ClassDef):
            continue
        fields = {target.id: stmt.value for stmt in cls.body if isinstance(stmt, ast.Assign)
                  for target in stmt.targets if isinstance(target, ast.Name)}
        if literal(fields.get("name")) != frontend:
            continue
        if "settings" not in fields:  # Frontend's own default, (), unless another base class gives some
            return [] if [ast.unparse(b) for b in cls.bases] == ["Frontend"] else None
        settings = fields["settings"]
        if not isinstance(settings, ast.Tuple):
            return None
        read = []
        for call in settings.elts:
            if not (isinstance(call, ast.Call) and ast.unparse(call.func) == "Setting" and len(call.args) == 4
                    and not call.keywords):
                return None
            values = [literal(arg) for arg in call.args[:3]]
            if not all(isinstance(v, str) for v in values):
                return None
            read.append(Declared(frontend, *values))
        return read
    return None


def literal(node: ast.AST | None) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def imported(frontend: str) -> list[Declared]:
    from irlens.frontends import FRONTENDS

    return [Declared(frontend, s.name, s.metavar, s.help) for s in FRONTENDS[frontend].settings]


def apply(args) -> None:
    """The settings given in `args`, for this process and the workers it starts (a bad value: UsageError)."""
    given = [(d, getattr(args, d.dest)) for d in declared() if getattr(args, d.dest, None) is not None]
    if not given:
        return
    from irlens.frontends import FRONTENDS

    for d, value in given:
        next(s for s in FRONTENDS[d.frontend].settings if s.name == d.name).apply(value)
