"""The run options of `run`, `cmd` and `fleet run`, made from RunRequest's fields once.

`@request_options(...)` gives a command function typer options for the RunRequest fields it
names (their flags and help from the field's Option, bakeoff/app/request.py), and calls it
with `request=RunRequest(...)` built from them; the function declares only its own options.
A command may rename or re-word a field's option (`cmd` calls --samples --runs) with
`Words`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import typer

from bakeoff.app.request import RunRequest

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Words:
    """A command's own words for a field: other flags, other help (None: the field's)."""

    flags: tuple[str, ...] | None = None
    help: str | None = None


def _parameter(name: str, words: Words | None) -> inspect.Parameter:
    option = RunRequest.options()[name]
    default = next(f.default for f in dataclasses.fields(RunRequest) if f.name == name)
    flags = words.flags if words and words.flags else option.flags
    help_text = words.help if words and words.help is not None else option.help
    info = (typer.Argument(help=help_text) if option.argument
            else typer.Option(*flags, help=help_text or None))
    # Typer takes None, not (), for a repeatable option that is not given.
    default = None if isinstance(default, tuple) else default
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=Annotated[option.cli_type, info])


def _is_argument(p: inspect.Parameter) -> bool:
    return any(isinstance(m, typer.models.ArgumentInfo)
               for m in getattr(p.annotation, "__metadata__", ()))


def request_options(without: tuple[str, ...] = (), words: dict[str, Words] | None = None,
                    same_help: str | None = None) -> Callable[[F], F]:
    """The decorated function gets every RunRequest field but those `without` as options,
    and is called with request=RunRequest(...) in their place: a new field is an option of
    every run command unless one leaves it out. same_help: one help for every field not
    re-worded (fleet run: "As for bakeoff run.")."""
    unknown = set(without) - set(RunRequest.options())
    if unknown:  # a programming error: a field renamed or removed
        raise TypeError(f"no RunRequest field {sorted(unknown)}")
    names = [n for n in RunRequest.options() if n not in without]
    words = dict(words or {})
    if same_help is not None:
        for name in names:
            words.setdefault(name, Words(help=same_help))

    def wrap(func: F) -> F:
        hints = typing.get_type_hints(func, include_extras=True)
        own = [p.replace(annotation=hints[p.name])
               for p in inspect.signature(func).parameters.values() if p.name != "request"]
        generated = [_parameter(n, words.get(n)) for n in names]
        every = [*generated, *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own)]
        # Arguments first, in order (`bakeoff run NAME...`, `bakeoff cmd 'A' 'B'`); typer
        # lists the options in --help in the order they come.
        ordered = sorted(every, key=lambda p: not _is_argument(p))
        @functools.wraps(func)
        def command(**given: Any) -> Any:
            request = RunRequest.from_words({n: given.pop(n) for n in names})
            return func(request=request, **given)

        command.__signature__ = inspect.Signature(ordered)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in ordered}
        return typing.cast(F, command)
    return wrap
