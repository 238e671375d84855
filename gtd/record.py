"""Records: classes whose annotated attributes get an `__init__`, `__eq__`, `__repr__` and, when frozen,
immutability and a `__hash__`, as `@dataclass` gives them, for the classes on `gtd sandbox run`'s path.

Why not `dataclasses`: importing it loads `inspect` (with `ast`, `dis`, `tokenize`), ~7 ms, and each
class it builds compiles its methods from generated source, ~0.5 ms a class; the ~25 classes `gtd
sandbox run` needs cost ~20 ms of every sandboxed command (issue 13). A record's methods are shared
functions that read the class's field list, so building one costs microseconds; creating an instance
costs a few microseconds more than a dataclass's, which nothing here does often.

The same semantics as the dataclass options used here: fields in annotation order (a field without a
default may not follow one with a default), positional or keyword arguments, `field(default_factory=...)`,
`field(compare=False)` / `field(repr=False)`, equality only between instances of the same class, frozen
instances refuse assignment (`FrozenInstanceError`, an AttributeError) and hash their compared fields,
unfrozen ones are unhashable. `replace(obj, **changes)` is `dataclasses.replace`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar, dataclass_transform

    T = TypeVar("T")
else:
    def dataclass_transform(**_options):
        """typing.dataclass_transform's marker is for type checkers only: nothing reads it at run time."""
        return lambda fn: fn

_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record."""


class Field:
    __slots__ = ("name", "default", "default_factory", "compare", "repr")

    def __init__(self, default: Any = _MISSING, default_factory: Callable[[], Any] = _MISSING,
                 compare: bool = True, repr: bool = True):  # noqa: A002 - dataclasses' spelling
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.default, self.default_factory, self.compare, self.repr = default, default_factory, compare, repr


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] = _MISSING, compare: bool = True,
          repr: bool = True) -> Any:  # noqa: A002
    """A field's options, as `dataclasses.field` takes them."""
    return Field(default, default_factory, compare, repr)


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the record `obj` with `changes` applied (validated by its __init__, as dataclasses does)."""
    values = {f.name: getattr(obj, f.name) for f in obj.__record_fields__}  # type: ignore[attr-defined]
    values.update(changes)
    return type(obj)(**values)


@dataclass_transform(field_specifiers=(field, Field))
def record(cls: type[T] | None = None, /, *, frozen: bool = False) -> Any:
    """Make `cls` a record (use as `@record` or `@record(frozen=True)`)."""

    def wrap(cls: type[T]) -> type[T]:
        return _build(cls, frozen)

    return wrap if cls is None else wrap(cls)


def _build(cls: type[T], frozen: bool) -> type[T]:
    found: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        found.update((f.name, f) for f in base.__dict__.get("__record_fields__", ()))
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if isinstance(annotation, str) and annotation.partition("[")[0] in ("ClassVar", "typing.ClassVar"):
            continue
        value = cls.__dict__.get(name, _MISSING)
        spec = value if isinstance(value, Field) else Field(default=value)
        if isinstance(value, Field):
            if value.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, value.default)
        if isinstance(spec.default, (list, dict, set)):
            raise ValueError(f"mutable default {type(spec.default).__name__} for field {name}: use default_factory")
        spec.name = name
        found[name] = spec
    all_fields = tuple(found.values())
    seen_default = False
    for f in all_fields:
        if f.default is not _MISSING or f.default_factory is not _MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    cls.__record_fields__ = all_fields  # type: ignore[attr-defined]
    cls.__match_args__ = tuple(f.name for f in all_fields)  # type: ignore[attr-defined]
    for name, method in (("__init__", _init), ("__repr__", _repr), ("__eq__", _eq)):
        if name not in cls.__dict__:
            setattr(cls, name, method)
    if frozen:
        cls.__setattr__ = _frozen_setattr  # type: ignore[method-assign, assignment]
        cls.__delattr__ = _frozen_delattr  # type: ignore[method-assign, assignment]
        if "__hash__" not in cls.__dict__ or cls.__dict__["__hash__"] is None:
            cls.__hash__ = _hash  # type: ignore[method-assign, assignment]
    elif "__hash__" not in cls.__dict__:
        cls.__hash__ = None  # type: ignore[assignment] - equal by value and mutable: unhashable, as a dataclass
    return cls


def _init(self, *args: Any, **kwargs: Any) -> None:
    cls = type(self)
    record_fields = cls.__record_fields__
    if len(args) > len(record_fields):
        raise TypeError(f"{cls.__name__}() takes {len(record_fields)} positional arguments but {len(args)} were given")
    names = {f.name for f in record_fields}
    for name in kwargs:
        if name not in names:
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {name!r}")
    setter = object.__setattr__
    for position, f in enumerate(record_fields):
        if position < len(args):
            if f.name in kwargs:
                raise TypeError(f"{cls.__name__}() got multiple values for argument {f.name!r}")
            value = args[position]
        elif f.name in kwargs:
            value = kwargs[f.name]
        elif f.default is not _MISSING:
            value = f.default
        elif f.default_factory is not _MISSING:
            value = f.default_factory()
        else:
            raise TypeError(f"{cls.__name__}() missing required argument: {f.name!r}")
        setter(self, f.name, value)


def _repr(self) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in type(self).__record_fields__ if f.repr)
    return f"{type(self).__qualname__}({shown})"


def _compared(self) -> tuple:
    return tuple(getattr(self, f.name) for f in type(self).__record_fields__ if f.compare)


def _eq(self, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _compared(self) == _compared(other)


def _hash(self) -> int:
    return hash(_compared(self))


def _frozen_setattr(self, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")
