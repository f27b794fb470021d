"""Exercise 18 (eval guard), hidden checks: file_hash against hashlib, guard_ok against any one-character
change, missing or renamed locked files, changes to unlocked files and the empty lock set."""

import hashlib
import itertools

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from grader.expect import call, expect_equal, expect_true

pytestmark = pytest.mark.exercise(18)

# Any text that has a UTF-8 encoding (no lone surrogates), often with line endings of both kinds, stray
# carriage returns, trailing spaces and characters whose Latin-1 bytes are no UTF-8 (U+0080..U+00FF).
piece = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=8),
    st.sampled_from(["\r\n", "\n", "\r", " ", "\t", "é", "\x80", "ÿ", "✓", "scale=1", "offset=0"]),
)
text = st.one_of(st.text(st.characters(codec="utf-8"), max_size=60), st.lists(piece, max_size=8).map("".join))
nonempty = st.text(st.characters(codec="utf-8"), min_size=1, max_size=60)
name = st.text("abcdefghijklmnopqrstuvwxyz._", min_size=1, max_size=10)


def sha(t):
    return hashlib.sha256(t.encode("utf-8")).hexdigest()


@st.composite
def repos(draw, min_locked=1):
    """Files (name -> text) and a lock set over some of them (name -> the hash of its text)."""
    names = draw(st.lists(name, min_size=max(min_locked, 1), max_size=5, unique=True))
    files = {n: draw(text) for n in names}
    locked_names = draw(
        st.lists(st.sampled_from(names), min_size=min_locked, max_size=len(names), unique=True)
    )
    return files, {n: sha(files[n]) for n in locked_names}


def expect_verdict(got, want, what):
    __tracebackhide__ = True
    if bool(got) is not want:
        raise AssertionError(
            f"{what}\n  expected: {want} (the guard {'passes' if want else 'fails'})\n  got:      {got!r}"
        )


_PINNED = {"eval.py": "scale=1\n", "train.py": "lr=0.02\n", "program.md": "Edit train.py only.\n"}


def _pin(student, reference):
    """Each guard check below also pins one passing and one failing verdict (and leaves its arguments
    alone): a guard that always answers the same, or answers without comparing hashes, fails it."""
    locked = {n: sha(_PINNED[n]) for n in ("eval.py", "program.md")}
    cases = [(dict(_PINNED), True), (dict(_PINNED, **{"eval.py": "scale=0\n"}), False)]
    for files, want in cases:
        before = dict(files)
        expect_verdict(student.guard_ok(files, dict(locked)), want, call("guard_ok", before, locked))
        expect_true(files == before, call("guard_ok", before, locked), f"the files became {files!r}")


@pytest.mark.promise("file_hash.sha256_hex")
@given(text)
def test_file_hash_is_the_sha256_hex_digest_of_the_utf8_text(student, t):
    """file_hash is the SHA-256 hex digest of the text encoded as UTF-8."""
    expect_equal(student.file_hash(t), sha(t), call("file_hash", t))


@pytest.mark.promise("guard_ok.passes_unchanged")
@given(repos())
def test_guard_passes_for_unchanged_files(student, reference, repo):
    """The guard passes when every locked file is present and unchanged (one locked file or more: the
    empty lock set is an edge of its own)."""
    _pin(student, reference)
    files, locked = repo
    expect_verdict(student.guard_ok(dict(files), locked), True, call("guard_ok", files, locked))


@pytest.mark.promise("guard_ok.fails_on_change")
@given(repos(), st.data())
def test_guard_fails_for_any_one_character_change_of_a_locked_file(student, reference, repo, data):
    """Changing one character of one locked file fails the guard, whichever character and position."""
    _pin(student, reference)
    files, locked = repo
    target = data.draw(st.sampled_from(sorted(locked)))
    old = files[target] or data.draw(nonempty)
    if not files[target]:
        files[target] = old
        locked[target] = sha(old)
    i = data.draw(st.integers(0, len(old) - 1))
    new_char = data.draw(st.characters(codec="utf-8").filter(lambda c: c != old[i]))
    changed = dict(files, **{target: old[:i] + new_char + old[i + 1 :]})
    expect_verdict(student.guard_ok(changed, locked), False, call("guard_ok", changed, locked))


@pytest.mark.promise("guard_ok.fails_on_change")
@given(repos(), st.data())
def test_guard_fails_when_a_locked_file_grows_or_shrinks(student, reference, repo, data):
    """Inserting or deleting one character of a locked file fails the guard."""
    _pin(student, reference)
    files, locked = repo
    target = data.draw(st.sampled_from(sorted(locked)))
    old = files[target]
    i = data.draw(st.integers(0, len(old)))
    if old and data.draw(st.booleans()):
        i = min(i, len(old) - 1)
        new = old[:i] + old[i + 1 :]
    else:
        new = old[:i] + data.draw(st.characters(codec="utf-8")) + old[i:]
    changed = dict(files, **{target: new})
    expect_verdict(student.guard_ok(changed, locked), False, call("guard_ok", changed, locked))


@pytest.mark.promise("guard_ok.missing_fails")
@given(repos(), st.data())
@example(({"eval.py": "", "train.py": "lr=1\n"}, {"eval.py": sha("")}), None)  # a deleted EMPTY locked file
def test_guard_fails_when_a_locked_file_is_missing(student, reference, repo, data):
    """A missing locked file fails the guard (False, not an exception)."""
    _pin(student, reference)
    files, locked = repo
    files = dict(files)
    target = data.draw(st.sampled_from(sorted(locked))) if data is not None else sorted(locked)[0]
    del files[target]
    expect_verdict(student.guard_ok(files, locked), False, call("guard_ok", files, locked))


@pytest.mark.promise("guard_ok.missing_fails")
@given(repos(), st.data())
def test_guard_fails_when_a_locked_file_is_renamed(student, reference, repo, data):
    """Renaming a locked file, with the same text, fails the guard."""
    _pin(student, reference)
    files, locked = repo
    target = data.draw(st.sampled_from(sorted(locked)))
    new_name = data.draw(name.filter(lambda n: n not in files))
    files[new_name] = files.pop(target)
    expect_verdict(student.guard_ok(files, locked), False, call("guard_ok", files, locked))


# Byte changes of a locked file that leave its text looking the same, or nearly: line endings, a lone CR,
# whitespace at the end, a byte order mark, a composed character decomposed (NFC to NFD), a no-break space
# for a space, a zero-width space; and a change at the first or last character.
LOOKALIKE = {
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "lone-cr": lambda t: t.replace("\n", "\r", 1),
    "trailing-space": lambda t: t.replace("\n", " \n", 1),
    "no-final-newline": lambda t: t[:-1],
    "bom": lambda t: "\ufeff" + t,
    "nfd": lambda t: t.replace("\u00e9", "e\u0301"),
    "nbsp": lambda t: t.replace(" ", "\u00a0", 1),
    "zero-width": lambda t: t.replace("=", "=\u200b", 1),
    "first-char": lambda t: "S" + t[1:],
    "last-char": lambda t: t[:-1] + "\r",
}
LOCKED_TEXT = {"eval.py": "scale=1\noffset=0\n", "program.md": "Edit train.py only. Caf\u00e9 rules.\n"}


@pytest.mark.promise("guard_ok.fails_on_change")
def test_guard_fails_for_a_byte_change_that_looks_the_same(student, reference):
    """Any byte change of a locked file fails the guard, also one that looks the same: CRLF for LF, a lone
    CR, a trailing space, the final newline removed, a byte order mark, a decomposed accent, a no-break
    or zero-width space, the first or last character."""
    _pin(student, reference)
    files = dict(LOCKED_TEXT, **{"train.py": "lr=0.02\n"})
    locked = {n: sha(t) for n, t in LOCKED_TEXT.items()}
    for change, target in itertools.product(sorted(LOOKALIKE), ("eval.py", "program.md")):
        new = LOOKALIKE[change](files[target])
        if new == files[target]:
            continue
        changed = dict(files, **{target: new})
        expect_verdict(student.guard_ok(changed, locked), False, call("guard_ok", changed, locked))


# Locked files missing in every way the docstring names: deleted (the first, the last, every one, an empty
# one), renamed (another case, a suffix), with unlocked files left or none at all.
MISSING = {
    "first": lambda f: {k: v for k, v in f.items() if k != "eval.py"},
    "last": lambda f: {k: v for k, v in f.items() if k != "program.md"},
    "all-locked": lambda f: {"train.py": f["train.py"]},
    "no-files": lambda f: {},
    "renamed-case": lambda f: {("Eval.py" if k == "eval.py" else k): v for k, v in f.items()},
    "renamed-suffix": lambda f: {(k + ".bak" if k == "program.md" else k): v for k, v in f.items()},
    "empty-deleted": lambda f: {k: v for k, v in f.items() if k != "notes.md"},
}


@pytest.mark.promise("guard_ok.missing_fails")
def test_guard_fails_for_a_missing_locked_file_whichever(student, reference):
    """A locked file missing from files fails the guard (False, not an error): the first or last locked
    file deleted, every one, no files at all, a locked file renamed (another case, a suffix), an empty
    locked file deleted."""
    _pin(student, reference)
    files = dict(LOCKED_TEXT, **{"train.py": "lr=0.02\n", "notes.md": ""})
    locked = {n: sha(files[n]) for n in ("eval.py", "notes.md", "program.md")}
    for how in sorted(MISSING):
        changed = MISSING[how](files)
        expect_verdict(student.guard_ok(changed, locked), False, call("guard_ok", changed, locked))


@pytest.mark.promise("guard_ok.unlocked_ignored")
@given(repos(), st.data())
def test_guard_ignores_changes_to_unlocked_files(student, reference, repo, data):
    """Changing, adding or removing files that are not locked leaves the guard passing."""
    _pin(student, reference)
    files, locked = repo
    for n in [n for n in files if n not in locked]:
        if data.draw(st.booleans()):
            del files[n]
        else:
            files[n] = data.draw(text)
    new_name = data.draw(name)
    if new_name not in locked:
        files[new_name] = data.draw(text)
    expect_verdict(student.guard_ok(files, locked), True, call("guard_ok", files, locked))


@pytest.mark.promise("guard_ok.empty_lock_passes")
@given(st.dictionaries(name, text, max_size=4))
def test_guard_with_an_empty_lock_set_passes(student, reference, files):
    """With no locked files the guard passes, whatever the files."""
    _pin(student, reference)
    expect_verdict(student.guard_ok(files, {}), True, call("guard_ok", files, {}))


@pytest.mark.promise("guard_ok.arguments_unchanged")
@given(repos(), st.data())
def test_guard_does_not_change_its_arguments(student, reference, repo, data):
    """guard_ok leaves the files and the lock set as they were, whether it passes or fails (a locked
    file changed, or missing)."""
    _pin(student, reference)
    files, locked = repo
    how = data.draw(st.sampled_from(["same", "changed", "missing"]))
    target = sorted(locked)[0]
    if how == "changed":
        files[target] += "#"
    elif how == "missing":
        del files[target]
    files_copy, locked_copy = dict(files), dict(locked)
    student.guard_ok(files, locked)
    expect_true(
        files == files_copy and locked == locked_copy and not student.last_changed,
        "guard_ok changed its arguments",
        f"{call('guard_ok', files_copy, locked_copy)} changed argument(s) {student.last_changed or '?'}",
    )


@pytest.mark.promise("guard_ok.fails_on_change")
def test_guard_fails_when_any_one_of_several_locked_files_changes(student, reference):
    """With several locked files, one changed file is enough to fail the guard."""
    _pin(student, reference)
    files = {
        "eval.py": "scale=1\noffset=0\n",
        "program.md": "Do not touch eval.py.\n",
        "train.py": "lr=0.02\n",
    }
    locked = {f: sha(files[f]) for f in ("eval.py", "program.md", "train.py")}
    for target in locked:
        changed = dict(files, **{target: files[target].replace("=", ":", 1).replace("Do", "do")})
        expect_verdict(student.guard_ok(changed, locked), False, call("guard_ok", changed, locked))


@pytest.mark.promise("guard_ok.per_file_digest")
@given(st.data())
@example(None)
def test_a_locked_file_copied_over_another_fails(student, reference, data):
    """Each locked file is compared with its own digest: a locked file's text copied over another locked
    file, or two locked files swapped, fails the guard (every digest is still among the locked ones)."""
    _pin(student, reference)
    names = ["eval.py", "program.md", "notes.md"]
    texts = ["scale=1\noffset=0\n", "Edit train.py only.\n", "x\r\n"]
    if data is not None:
        texts = data.draw(st.lists(text, min_size=3, max_size=3, unique=True))
    files = dict(zip(names, texts, strict=True), **{"train.py": "lr=0.02\n"})
    locked = {n: sha(files[n]) for n in names}
    a, b = ("eval.py", "program.md") if data is None else data.draw(st.permutations(names))[:2]
    copied = dict(files, **{b: files[a]})
    swapped = dict(files, **{a: files[b], b: files[a]})
    for changed in (copied, swapped):
        expect_verdict(student.guard_ok(changed, locked), False, call("guard_ok", changed, locked))


@pytest.mark.promise("file_hash.exact_text")
@given(text, st.data())
@example("scale=1\r\noffset=0\r\n", None)
@example("", None)
@example("Edit train.py only. \n", None)
def test_file_hash_hashes_the_text_exactly_as_given(student, t, data):
    """Nothing is normalised before hashing: CRLF or LF, a lone CR, trailing spaces, the empty text."""
    variants = [t, t.replace("\n", "\r\n"), t + " ", t + "\n", t.replace("\r\n", "\n")]
    if data is None:
        variants = [t]
    for v in dict.fromkeys(variants):
        expect_equal(student.file_hash(v), sha(v), call("file_hash", v))


@pytest.mark.promise("file_hash.utf8_bytes")
@given(
    st.text(
        st.characters(min_codepoint=0x80, max_codepoint=0x2FFF, exclude_categories=["Cs"]),
        min_size=1,
        max_size=12,
    ),
    text,
)
@example("é", "")
@example("\x80ÿ", "naïve ")
def test_file_hash_hashes_non_ascii_text_as_utf8(student, special, t):
    """Text with characters past ASCII (also U+0080..U+00FF, whose Latin-1 bytes are no UTF-8) is hashed
    as its UTF-8 bytes."""
    v = t + special
    expect_equal(student.file_hash(v), sha(v), call("file_hash", v))
