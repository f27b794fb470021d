"""The lab's call contract: which functions each exercise function calls, and which arguments it mutates.

The lab's call contract, derived from the reference's source at `grader build` (never hand-listed):

- `answers`: for each exercise function, the exercise functions of other exercises that its reference
  body calls, directly or through helpers that are not exercises (functions, methods of the lab's
  classes, found by name). Only these are answered by the reference while that function is graded: one
  bug costs points once, and no harder exercise's reference becomes an oracle for an easier one.
- `mutates`: for each exercise function, the parameters its reference body may change in place (a
  policy, a gradient table, a Meter, a `random.Random`), each with its position. Only these mutations
  of a call are written back into the test's objects.

Both are found by reading the reference's AST, conservatively: a name that may be called counts as
called; a parameter counts as mutated when the body assigns into it or into anything reached from it
(an item, an attribute, an element it iterates over), calls a method on it that is not known to leave
its receiver alone, or hands it to a lab function that mutates the parameter it lands in, or to a
callable it does not know.
"""

from __future__ import annotations

import ast
import builtins
import types
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path

_Function = ast.FunctionDef | ast.AsyncFunctionDef  # a def of the lab (a function or a method)

# Methods known to leave their receiver unchanged (str, bytes, list, tuple, dict, set, number methods).
_PURE_METHODS = frozenset(
    "copy count index get keys values items split rsplit splitlines strip lstrip rstrip join startswith "
    "endswith lower upper casefold title capitalize swapcase format format_map replace find rfind "
    "rindex partition rpartition encode decode isdigit isalpha isalnum isspace isupper islower "
    "isidentifier isnumeric isdecimal zfill center ljust rjust expandtabs translate removeprefix "
    "removesuffix union intersection difference symmetric_difference issubset issuperset isdisjoint "
    "hex is_integer conjugate bit_length as_integer_ratio fromkeys getstate".split()
)
# Methods whose result is a part of the receiver, and methods whose result is a new container (or a view)
# of its parts.
_ELEMENT_METHODS = frozenset({"get", "setdefault", "pop", "popitem"})
_VIEW_METHODS = frozenset({"values", "items", "keys", "copy"})
# Built-ins whose result is a part of an argument, and built-ins whose result is a new container (or an
# iterator) of the arguments' parts.
_ELEMENT_BUILTINS = frozenset({"next", "max", "min"})
_CONTAINER_BUILTINS = frozenset(
    {"list", "tuple", "sorted", "reversed", "iter", "enumerate", "zip", "filter", "set", "dict", "frozenset"}
)
# Built-ins that change their first argument; every other built-in (and exception) leaves its arguments be.
_MUTATING_BUILTINS = frozenset({"setattr", "delattr"})
_BUILTINS = frozenset(dir(builtins))
# Methods that change their arguments (beyond their receiver): random.shuffle, object.__setattr__, ...
_ARGUMENT_MUTATING_METHODS = frozenset(
    {"shuffle", "__setattr__", "__delattr__", "__setitem__", "__delitem__"}
)


def derive_contract(source: str, exercise_of: Mapping[str, int]) -> dict:
    """The contract of the reference `source` whose exercise functions are `exercise_of` (name -> id):
    ``{"answers": {function: [names]}, "mutates": {function: {parameter: position or None}}}`` for
    every top-level function of it (a test may call a given function too); a function that calls no
    other exercise, or mutates nothing, is left out."""
    lab = _Lab(ast.parse(source))
    answers, mutates = {}, {}
    for name in sorted(lab.functions):
        node = lab.functions[name]
        if called := sorted(lab.answers(name, exercise_of)):
            answers[name] = called
        changed = lab.mutated(node)
        if params := {p: pos for p, pos in _parameters(node) if p in changed}:
            mutates[name] = params
    return {"answers": answers, "mutates": mutates}


def submission_runs(source: str, exercise_of: Mapping[str, int]) -> dict[str, set[str]]:
    """For each top-level function of the reference `source`, the top-level functions that a call of it
    runs in the submission's module (itself included): what its body reaches through given code and its
    own exercise's functions, stopping at other exercises' functions, which the reference answers. So a
    change to a function's body can reach only the checks that call a function running it."""
    lab = _Lab(ast.parse(source))
    return {name: lab.runs(name, exercise_of) for name in lab.functions}


def module_contract(module: types.ModuleType, exercise_of: Mapping[str, int]) -> dict:
    """The contract of a loaded reference module (when no stored one is at hand: the kit's own tests)."""
    if module.__file__ is None:
        raise ValueError(f"{module.__name__} has no source file to derive a contract from")
    return derive_contract(Path(module.__file__).read_text(encoding="utf-8"), exercise_of)


def _parameters(node: _Function | ast.Lambda) -> list[tuple[str, int | None]]:
    positional = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    return [(p, i) for i, p in enumerate(positional)] + [(a.arg, None) for a in node.args.kwonlyargs]


class _Lab:
    """The reference module's functions and methods, and what each may call or mutate."""

    def __init__(self, tree: ast.Module):
        self.functions: dict[str, _Function] = {}
        self.classes: dict[str, dict[str, _Function]] = {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = {
                    n.name: n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                }
        self.methods: dict[str, list[_Function]] = {}
        for methods in self.classes.values():
            for name, method in methods.items():
                self.methods.setdefault(name, []).append(method)
        self._mutated: dict[int, frozenset[str]] = {}
        self._busy: set[int] = set()

    # -- the call graph -------------------------------------------------------------------------------

    def callees(self, node: ast.AST) -> Iterable[tuple[str | None, _Function]]:
        """What `node`'s body may call: (module-level function name or None for a method, its node)."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                if sub.id in self.functions:
                    yield sub.id, self.functions[sub.id]
                elif sub.id in self.classes:  # a constructor
                    for special in ("__init__", "__post_init__", "__new__"):
                        if special in self.classes[sub.id]:
                            yield None, self.classes[sub.id][special]
            elif isinstance(sub, ast.Attribute):  # a method or property of some lab class, by its name
                for method in self.methods.get(sub.attr, ()):
                    yield None, method

    def answers(self, name: str, exercise_of: Mapping[str, int]) -> set[str]:
        """The other exercises' functions reachable from `name`'s reference body through non-exercise
        code (and through its own exercise's functions, which the student's code runs)."""
        mine = exercise_of.get(name)
        found: set[str] = set()
        seen = {id(self.functions[name])}
        todo = [self.functions[name]]
        while todo:
            for callee, node in self.callees(todo.pop()):
                if callee is not None and callee in exercise_of and exercise_of[callee] != mine:
                    found.add(callee)  # answered by the reference: what it calls is the reference's
                    continue
                if id(node) not in seen:
                    seen.add(id(node))
                    todo.append(node)
        return found

    def runs(self, name: str, exercise_of: Mapping[str, int]) -> set[str]:
        """The top-level functions a call of `name` runs in the submission (see `submission_runs`)."""
        mine = exercise_of.get(name)
        found = {name}
        seen = {id(self.functions[name])}
        todo = [self.functions[name]]
        while todo:
            for callee, node in self.callees(todo.pop()):
                if callee is not None and callee in exercise_of and exercise_of[callee] != mine:
                    continue  # answered by the reference
                if callee is not None:
                    found.add(callee)
                if id(node) not in seen:
                    seen.add(id(node))
                    todo.append(node)
        return found

    # -- mutations ------------------------------------------------------------------------------------

    def mutated(self, node: _Function) -> frozenset[str]:
        """The parameters of `node` (a function or method: `self` included) that its body may change."""
        key = id(node)
        if key in self._mutated:
            return self._mutated[key]
        if key in self._busy:  # recursion: what is known so far
            return frozenset()
        self._busy.add(key)
        try:
            result = frozenset(_Mutations(self, node).run())
        finally:
            self._busy.discard(key)
        self._mutated[key] = result
        return result

    def mutated_positions(self, target: _Function, offset: int) -> tuple[set[int], set[str]]:
        """The argument positions (shifted by `offset`: 1 for a bound method) and keywords that a call
        of `target` may mutate."""
        changed = self.mutated(target)
        positions = {pos - offset for p, pos in _parameters(target) if pos is not None and p in changed}
        return {p for p in positions if p >= 0}, set(changed)


class _Mutations:
    """Which parameters of one function its body may change: a flow-insensitive alias analysis.

    A name may *be* (a part of) a parameter's object (`alias`: changing it changes the parameter), or
    be a fresh container that *holds* such parts (`holds`: a copy such as ``dict(files)``; changing the
    container leaves the parameter alone, changing one of its items does not)."""

    def __init__(self, lab: _Lab, node: _Function):
        self.lab, self.node = lab, node
        self.alias: dict[str, set[str]] = {p: {p} for p, _ in _parameters(node)}
        for extra in (node.args.vararg, node.args.kwarg):
            if extra is not None:
                self.alias[extra.arg] = {extra.arg}
        self.holds: dict[str, set[str]] = {}
        self.changed: set[str] = set()

    def run(self) -> set[str]:
        params = {p for p, _ in _parameters(self.node)}
        for _ in range(20):  # to a fixed point: aliases may flow backwards through loops
            before = self._size()
            for sub in ast.walk(self.node):
                self.visit(sub)
            if self._size() == before:
                break
        return self.changed & params

    def _size(self) -> tuple[int, int, int]:
        return (
            sum(len(v) for v in self.alias.values()),
            sum(len(v) for v in self.holds.values()),
            len(self.changed),
        )

    def roots(self, expr: ast.AST | None) -> set[str]:
        """The parameters whose objects (or parts of them) `expr` may evaluate to."""
        if expr is None:
            return set()
        if isinstance(expr, ast.Name):
            return set(self.alias.get(expr.id, ()))
        if isinstance(expr, ast.Attribute | ast.Subscript | ast.Starred):
            return self.parts(expr.value)
        if isinstance(expr, ast.NamedExpr):
            return self.roots(expr.value)
        if isinstance(expr, ast.IfExp):
            return self.roots(expr.body) | self.roots(expr.orelse)
        if isinstance(expr, ast.BoolOp):
            return set().union(*(self.roots(v) for v in expr.values))
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Name) and func.id in _ELEMENT_BUILTINS:
                return set().union(set(), *(self.parts(a) for a in expr.args))
            if isinstance(func, ast.Name) and func.id in ("vars", "getattr"):
                return set().union(set(), *(self.roots(a) for a in expr.args[:1]))
            if isinstance(func, ast.Attribute) and func.attr in _ELEMENT_METHODS:
                return self.parts(func.value)
        return set()

    def held(self, expr: ast.AST | None) -> set[str]:
        """The parameters that a fresh container `expr` may evaluate to holds parts of."""
        if expr is None:
            return set()
        if isinstance(expr, ast.Name):
            return set(self.holds.get(expr.id, ()))
        if isinstance(expr, ast.Attribute | ast.Subscript | ast.NamedExpr):
            return self.held(expr.value)
        if isinstance(expr, ast.IfExp):
            return self.held(expr.body) | self.held(expr.orelse)
        if isinstance(expr, ast.BoolOp):
            return set().union(*(self.held(v) for v in expr.values))
        if isinstance(expr, ast.Tuple | ast.List | ast.Set):
            return set().union(set(), *(self.parts(e) for e in expr.elts))
        if isinstance(expr, ast.Dict):
            return set().union(set(), *(self.parts(v) for v in expr.values))
        if isinstance(expr, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            return self.parts(expr.elt)
        if isinstance(expr, ast.DictComp):
            return self.parts(expr.value)
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Name) and func.id in _CONTAINER_BUILTINS:
                return set().union(set(), *(self.parts(a) for a in expr.args))
            if isinstance(func, ast.Attribute) and func.attr in _VIEW_METHODS:
                return self.parts(func.value)
        return set()

    def parts(self, expr: ast.AST | None) -> set[str]:
        """The parameters that an item or attribute of `expr` may be a part of."""
        return self.roots(expr) | self.held(expr)

    def bind(self, target: ast.AST, roots: set[str], held: AbstractSet[str] = frozenset()) -> None:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                if roots:
                    self.alias.setdefault(sub.id, set()).update(roots)
                if held:
                    self.holds.setdefault(sub.id, set()).update(held)

    def change(self, expr: ast.AST) -> None:
        self.changed |= self.roots(expr)

    def visit(self, sub: ast.AST) -> None:
        if isinstance(sub, ast.Assign):
            for target in sub.targets:
                if not self.pair(target, sub.value):
                    self.store(target, sub.value)
        elif isinstance(sub, ast.AnnAssign) and sub.value is not None:
            self.store(sub.target, sub.value)
        elif isinstance(sub, ast.AugAssign):
            # `x.a += 1` and `x[i] += 1` change x; `total += x` rebinds a name (for a list it would
            # extend it in place: the reference does not do that to a parameter, and validate would
            # catch a contract mutation missed here, since its test would then fail on the reference)
            if isinstance(sub.target, ast.Attribute | ast.Subscript):
                self.change(sub.target.value)
        elif isinstance(sub, ast.Delete):
            for target in sub.targets:
                if isinstance(target, ast.Attribute | ast.Subscript):
                    self.change(target.value)
        elif isinstance(sub, ast.For | ast.AsyncFor | ast.comprehension):
            target, source = sub.target, sub.iter
            if (
                isinstance(source, ast.Call)
                and isinstance(source.func, ast.Name)
                and source.func.id == "enumerate"
                and source.args
                and isinstance(target, ast.Tuple)
                and len(target.elts) == 2
            ):  # the index is a number: only the item is a part of what is enumerated
                self.bind(target.elts[1], self.parts(source.args[0]))
            else:
                self.bind(target, self.parts(source))  # an item of what it iterates over
        elif isinstance(sub, ast.withitem) and sub.optional_vars is not None:
            self.bind(sub.optional_vars, self.roots(sub.context_expr))
        elif isinstance(sub, ast.NamedExpr):
            self.bind(sub.target, self.roots(sub.value), self.held(sub.value))
        elif isinstance(sub, ast.Call):
            self.call(sub)

    def store(self, target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, ast.Attribute | ast.Subscript):
            self.change(target.value)
        elif isinstance(target, ast.Tuple | ast.List):  # unpacking: each name is an item of the value
            for element in target.elts:
                if isinstance(element, ast.Starred):
                    self.bind(element.value, set(), self.parts(value))
                elif isinstance(element, ast.Attribute | ast.Subscript):
                    self.change(element.value)
                else:
                    self.bind(element, self.parts(value))
        else:
            self.bind(target, self.roots(value), self.held(value))

    def pair(self, targets: ast.AST, value: ast.AST) -> bool:
        """`a, b = x, y`: each name takes its own value only."""
        if not (isinstance(targets, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List)):
            return False
        if len(targets.elts) != len(value.elts) or any(isinstance(e, ast.Starred) for e in targets.elts):
            return False
        for target, element in zip(targets.elts, value.elts, strict=True):
            if not self.pair(target, element):
                self.store(target, element)
        return True

    def call(self, call: ast.Call) -> None:
        func, lab = call.func, self.lab
        if isinstance(func, ast.Name):
            if func.id in lab.functions:
                self.through(call, [lab.functions[func.id]], offset=0)
            elif func.id in lab.classes:
                inits = [m for n, m in lab.classes[func.id].items() if n in ("__init__", "__post_init__")]
                self.through(call, inits, offset=1)
            elif func.id in _MUTATING_BUILTINS and call.args:
                self.change(call.args[0])
            elif func.id not in _BUILTINS or func.id in self.alias:
                self.everything(call)  # a callable it does not know (a parameter, a callback)
            return
        if isinstance(func, ast.Attribute):
            receiver = func.value
            methods = lab.methods.get(func.attr, [])
            if methods:
                for method in methods:
                    if method.args.args and method.args.args[0].arg in lab.mutated(method):
                        self.change(receiver)
                self.through(call, methods, offset=1)
            elif isinstance(receiver, ast.Name) and receiver.id not in self.alias and _is_module(receiver):
                if func.attr in _ARGUMENT_MUTATING_METHODS:
                    self.everything(call)
            else:
                if func.attr not in _PURE_METHODS:
                    self.change(receiver)  # list.append, dict.update, rng.random, ...
                if func.attr in _ARGUMENT_MUTATING_METHODS:
                    self.everything(call)
            return
        self.everything(call)

    def through(self, call: ast.Call, targets: list[_Function], offset: int) -> None:
        """Arguments handed to lab functions: mutated where the parameter they land in is."""
        for target in targets:
            positions, names = self.lab.mutated_positions(target, offset)
            params = [p for p, pos in _parameters(target) if pos is not None][offset:]
            for i, arg in enumerate(call.args):
                spread = isinstance(arg, ast.Starred) or (target.args.vararg and i >= len(params))
                if spread or i in positions:
                    self.changed |= self.parts(arg)  # whether it changes the container or its items
            for keyword in call.keywords:
                if keyword.arg is None or keyword.arg in names:
                    self.changed |= self.parts(keyword.value)

    def everything(self, call: ast.Call) -> None:
        for value in (*call.args, *(keyword.value for keyword in call.keywords)):
            self.changed |= self.parts(value)


def _is_module(name: ast.Name) -> bool:
    """A receiver that reads as a module (re, math, random, hashlib, ...): lower case, not a local."""
    return name.id.islower()
