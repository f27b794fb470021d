"""The codec: values crossing between the grader and a submission, as type-tagged JSON.

Only plain data crosses: None, bool, int, float (inf and nan included), str, list, tuple, dict (keys of
any encodable hashable type), set, frozenset, `random.Random` state, instances of the lab's own classes
(by class name, as their attribute dict) and the lab's module-level functions (by name). Anything else,
a callable included, is either a callback handle issued by the encoding side or an error. Decoding
builds fresh objects of exact built-in types or of the classes of the module it decodes into, so a
value that claims to equal everything, or a float subclass, cannot come out of it. Pickle is never used.

JSON shape: a JSON object is always a tag (plain dicts travel as ``{"$dict": [[k, v], ...]}``):
``$float`` ("nan", "inf", "-inf"), ``$tuple``, ``$dict``, ``$set``, ``$frozenset``, ``$random``,
``$object`` (with ``state``), ``$function``, ``$callback``.
"""

from __future__ import annotations

import json
import math
import random
import types
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 100
MAX_SHARED_HASH = 8  # keys of one dict or set that may share a hash: more is a collision attack


class CodecError(ValueError):
    """A value that cannot cross the boundary, or a message that is not a valid encoding."""


class Codec:
    """Encodes values from, and decodes values into, one lab module (the reference or the submission).

    With `issue_callbacks`, a callable that is not a lab function is encoded as a handle into
    `callbacks` (the grader does this for a proposer a test passes); `make_proxy(handle)` builds the
    callable that stands for a handle the other side issued (the worker's side). Otherwise callables
    are refused.

    An object's state never names a method, property or other callable attribute of its class (an
    instance attribute would hide it: a `probs` that names another lab function would run that function
    where the class's method was meant). Where the values come from a side that is not trusted to call
    anything (the reference's worker answering a submission), `functions` names the only lab functions
    that may cross (None: any), and `construct` builds dataclass objects through their constructors.
    """

    def __init__(
        self,
        module: types.ModuleType,
        make_proxy: Callable[[int], Callable] | None = None,
        issue_callbacks: bool = False,
    ):
        self.module = module
        self.make_proxy = make_proxy
        self.issue_callbacks = issue_callbacks
        self.callbacks: dict[int, Callable] = {}
        self.functions: frozenset[str] | None = None
        self.construct = False
        self._proxies: dict[int, tuple[Callable, int]] = {}  # id(proxy) -> (proxy, its handle)

    def forget_callables(self) -> None:
        """Drop the handles and proxies of a finished call."""
        self.callbacks.clear()
        self._proxies.clear()

    # -- encoding -------------------------------------------------------------------------------------

    def encode(self, value: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise CodecError("value nested too deeply")
        kind = type(value)
        if value is None or kind is bool or kind is int or kind is str:
            return value
        if kind is float:
            return value if math.isfinite(value) else {"$float": repr(value)}
        if kind is list:
            return [self.encode(v, depth + 1) for v in value]
        if kind is tuple:
            return {"$tuple": [self.encode(v, depth + 1) for v in value]}
        if kind is dict:
            return {
                "$dict": [[self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in value.items()]
            }
        if kind is set or kind is frozenset:
            items = sorted((self.encode(v, depth + 1) for v in value), key=_canonical)
            return {"$set" if kind is set else "$frozenset": items}
        if kind is random.Random:
            version, internal, gauss = value.getstate()
            return {"$random": [version, list(internal), gauss]}
        if self._is_lab_class(kind):
            return {"$object": kind.__name__, "state": self.encode(dict(vars(value)), depth + 1)}
        if self._is_lab_function(value):
            return {"$function": value.__name__}
        if id(value) in self._proxies and self._proxies[id(value)][0] is value:
            return {"$callback": self._proxies[id(value)][1]}
        if callable(value) and self.issue_callbacks:
            handle = len(self.callbacks) + 1
            self.callbacks[handle] = value
            return {"$callback": handle}
        raise CodecError(f"a value of type {kind.__name__} cannot be graded")

    def _is_lab_class(self, kind: type) -> bool:
        return (
            kind.__module__ == self.module.__name__
            and getattr(self.module, kind.__name__, None) is kind
            and not issubclass(kind, BaseException)
        )

    def _is_lab_function(self, value: Any) -> bool:
        return (
            isinstance(value, types.FunctionType)
            and value.__module__ == self.module.__name__
            and getattr(self.module, value.__name__, None) is value
        )

    # -- decoding -------------------------------------------------------------------------------------

    def decode(self, data: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise CodecError("value nested too deeply")
        kind = type(data)
        if data is None or kind is bool or kind is int or kind is str:
            return data
        if kind is float:
            return float(data)
        if kind is list:
            return [self.decode(v, depth + 1) for v in data]
        if kind is not dict or len(data) not in (1, 2):
            raise CodecError(f"not an encoded value: {_preview(data)}")
        tag = next(iter(data))
        decoder = self._decoders.get(tag)
        if decoder is None:
            raise CodecError(f"unknown tag {tag!r}")
        return decoder(self, data, depth + 1)

    def _float(self, data: dict, depth: int) -> float:
        text = data["$float"]
        if text not in ("nan", "inf", "-inf"):
            raise CodecError(f"bad float {text!r}")
        return float(text)

    def _tuple(self, data: dict, depth: int) -> tuple:
        return tuple(self.decode(v, depth) for v in _items(data, "$tuple"))

    def _dict(self, data: dict, depth: int) -> dict:
        pairs = _items(data, "$dict")
        if not all(type(pair) is list and len(pair) == 2 for pair in pairs):
            raise CodecError("a dict entry must be a [key, value] pair")
        keys = _keys([self.decode(pair[0], depth) for pair in pairs])
        return dict(zip(keys, (self.decode(pair[1], depth) for pair in pairs), strict=True))

    def _set(self, data: dict, depth: int) -> set:
        return set(_keys([self.decode(v, depth) for v in _items(data, "$set")]))

    def _frozenset(self, data: dict, depth: int) -> frozenset:
        return frozenset(_keys([self.decode(v, depth) for v in _items(data, "$frozenset")]))

    def _random(self, data: dict, depth: int) -> random.Random:
        state = data["$random"]
        try:
            version, internal, gauss = state
            rng = random.Random.__new__(random.Random)  # not seeded from the OS: its state is set next
            # setstate checks every word (an int of 32 bits) and the length: a bad state raises
            rng.setstate((int(version), tuple(internal), None if gauss is None else float(gauss)))
        except (TypeError, ValueError, OverflowError) as exc:
            raise CodecError(f"bad random.Random state: {exc}") from None
        return rng

    def _object(self, data: dict, depth: int) -> Any:
        name = data["$object"]
        cls = getattr(self.module, name, None) if type(name) is str else None
        if not isinstance(cls, type) or not self._is_lab_class(cls):
            raise CodecError(f"{name!r} is not a class of the lab")
        state = self.decode(data.get("state"), depth)
        if type(state) is not dict or not all(type(k) is str for k in state):
            raise CodecError(f"bad state for {name}")
        fields = getattr(cls, "__dataclass_fields__", {})
        for key in state:
            if key not in fields and (key.startswith("__") or _hidden_by(cls, key)):
                raise CodecError(f"{name}'s state may not name its class's attribute {key!r}")
        if self.construct and fields:
            return _constructed(cls, fields, state)
        # the lab class's own __new__; the checker takes cls.__new__ for type's (the metaclass's)
        obj = cls.__new__(cls)  # type: ignore[call-overload]
        vars(obj).update(state)
        return obj

    def _function(self, data: dict, depth: int) -> Callable:
        name = data["$function"]
        fn = getattr(self.module, name, None) if type(name) is str else None
        if fn is None or not self._is_lab_function(fn):  # no class, nothing imported (dataclasses.replace)
            raise CodecError(f"{name!r} is not a function of the lab")
        if self.functions is not None and name not in self.functions:
            raise CodecError(f"{name!r} may not be an argument here (not on the open call's graph)")
        return fn

    def _callback(self, data: dict, depth: int) -> Callable:
        handle = data["$callback"]
        if self.make_proxy is None or type(handle) is not int:
            raise CodecError("callables cannot cross here")
        proxy = self.make_proxy(handle)
        self._proxies[id(proxy)] = (proxy, handle)
        return proxy

    _decoders = {
        "$float": _float,
        "$tuple": _tuple,
        "$dict": _dict,
        "$set": _set,
        "$frozenset": _frozenset,
        "$random": _random,
        "$object": _object,
        "$function": _function,
        "$callback": _callback,
    }


def dumps(message: Any) -> str:
    """Strict JSON text of an already encoded message (no NaN, no Infinity)."""
    return json.dumps(message, allow_nan=False, separators=(",", ":"))


# The most digits an integer in a message may have: CPython's own default limit (sys.int_info), checked
# before conversion, so that a Python without that limit (3.11.0rc1: Ubuntu 22.04's python3.11) never
# spends quadratic time converting a number a submission chose (a million digits: 4 s of the grader's CPU).
MAX_INT_DIGITS = 4300


def _parse_int(digits: str) -> int:
    if len(digits) > MAX_INT_DIGITS + 1:  # a sign may lead
        raise CodecError(f"an integer of {len(digits)} digits (at most {MAX_INT_DIGITS})")
    return int(digits)


def loads(text: str) -> Any:
    """Parse JSON text; NaN and Infinity literals are refused (the codec tags them), and integers longer
    than MAX_INT_DIGITS digits, before they are converted."""

    def refuse(constant: str) -> Any:
        raise CodecError(f"bare {constant} in a message")

    try:
        return json.loads(text, parse_constant=refuse, parse_int=_parse_int)
    except CodecError:
        raise
    except json.JSONDecodeError as exc:
        raise CodecError(f"not JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:  # an int too long to convert, nesting too deep
        raise CodecError(f"not a message this side accepts: {type(exc).__name__}") from None


def update_in_place(target: Any, new: Any) -> Any:
    """Make `target` hold what `new` holds, keeping the identity of every mutable part that both share.

    Returns the object the caller should keep: `target` itself where it could be updated, else `new`
    (an immutable value cannot change in place). Used to write a call's mutations back into the
    caller's own arguments, so that a test reads as if the call were local. A frozen dataclass is
    immutable too: never written into (a container that holds one may take another in its place).
    """
    if type(target) is not type(new):
        return new
    if _frozen(target):
        return target if target == new else new
    if isinstance(target, list):
        if len(target) == len(new):
            for i, (old_item, new_item) in enumerate(zip(target, new, strict=True)):
                target[i] = update_in_place(old_item, new_item)
        else:
            target[:] = new
        return target
    if isinstance(target, dict):
        for key in [k for k in target if k not in new]:
            del target[key]
        for key, value in new.items():
            target[key] = update_in_place(target[key], value) if key in target else value
        return target
    if isinstance(target, set):
        target.clear()
        target.update(new)
        return target
    if isinstance(target, tuple):
        # A tuple cannot change, but mutable things inside it can (a TextGrad graph of (module, TGVar)).
        same = len(target) == len(new) and all(
            update_in_place(a, b) is a for a, b in zip(target, new, strict=True)
        )
        return target if same else new
    if isinstance(target, random.Random):
        target.setstate(new.getstate())
        return target
    if hasattr(target, "__dict__") and not isinstance(target, type | types.FunctionType):
        state = vars(target)
        for key in [k for k in state if k not in vars(new)]:
            del state[key]
        for key, value in vars(new).items():
            state[key] = update_in_place(state[key], value) if key in state else value
        return target
    return new if target != new else target


def _hidden_by(cls: type, key: str) -> bool:
    """Whether an instance attribute `key` would hide something of `cls` that is called or computed (a
    method, a property, any descriptor or callable); a plain class-level value (a default) it may hide."""
    for klass in cls.__mro__:
        if key in vars(klass):
            found = vars(klass)[key]
            return callable(found) or hasattr(type(found), "__get__")
    return False


def _constructed(cls: type, fields: dict, state: dict) -> Any:
    """A dataclass object built by its constructor (its checks and __post_init__ run) from `state`, the
    fields its constructor does not take, and any other attribute, set after."""
    init = {k: v for k, v in state.items() if k in fields and fields[k].init}
    try:
        obj = cls(**init)
    except Exception as exc:  # noqa: BLE001 - whatever the constructor refused, the value is refused
        raise CodecError(f"{cls.__name__} could not be built from its state: {type(exc).__name__}") from None
    vars(obj).update({k: v for k, v in state.items() if k not in init})
    return obj


def _frozen(value: Any) -> bool:
    params = getattr(type(value), "__dataclass_params__", None)
    return bool(getattr(params, "frozen", False))


def _items(data: dict, tag: str) -> list:
    items = data[tag]
    if type(items) is not list:
        raise CodecError(f"{tag} needs a list")
    return items


def _keys(keys: list) -> list:
    """`keys`, once each is known hashable and no hash is shared by more than MAX_SHARED_HASH of them
    (keys chosen to collide would make building the dict or set quadratic)."""
    shared: dict[int, int] = {}
    for key in keys:
        try:
            digest = hash(key)
        except TypeError:
            raise CodecError(f"unhashable key or set member: {type(key).__name__}") from None
        shared[digest] = shared.get(digest, 0) + 1
        if shared[digest] > MAX_SHARED_HASH:
            raise CodecError(f"more than {MAX_SHARED_HASH} keys share one hash (chosen to collide?)")
    return keys


def _canonical(encoded: Any) -> str:
    return json.dumps(encoded, sort_keys=True)


def _preview(data: Any) -> str:
    text = repr(data)
    return text if len(text) <= 80 else text[:77] + "..."
