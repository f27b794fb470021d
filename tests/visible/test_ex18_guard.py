"""Exercise 18 (eval guard): file_hash(text) is the SHA-256 hex digest of the text's UTF-8 bytes;
guard_ok(files, locked) passes only if every locked file is present and byte-identical to its hash.

A locked file that is missing fails the guard (returns False). The seed raised KeyError there; the kit
changed this on purpose: a guard must fail closed.
"""

import pytest

from grader.expect import call, expect_equal

pytestmark = pytest.mark.exercise(18)

EVAL = "scale=1\noffset=0\n"
PROGRAM = "Edit train.py only. Lower loss is better. Do not touch eval.py.\n"
TRAIN = "lr=0.02\ndepth=4\nwidth=96\n"
EVAL_HASH = "fcff51ac261dc9fa3efc01503e56d0e5e9a30029bdbd1f244111373e69bf3683"
PROGRAM_HASH = "a97002800ef4e07774d1ac17c850a12218a89e465fce03263199e79467143d97"
LOCKED = {"eval.py": EVAL_HASH, "program.md": PROGRAM_HASH}


def expect_verdict(got, want, what):
    """The guard's answer counts by its truth value (True/False; a truthy or falsy value is read the same)."""
    __tracebackhide__ = True
    if bool(got) is not want:
        raise AssertionError(
            f"{what}\n  expected: {want} (the guard {'passes' if want else 'fails'})\n  got:      {got!r}"
        )


def repo(**changes):
    files = {"train.py": TRAIN, "eval.py": EVAL, "program.md": PROGRAM}
    files.update(changes)
    return files


@pytest.mark.promise("file_hash.sha256_hex")
def test_file_hash_is_the_sha256_hex_digest(student):
    """file_hash gives the 64-character SHA-256 hex digest (hashlib.sha256(text.encode()).hexdigest())."""
    for text, want in (
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        (EVAL, EVAL_HASH),
        (PROGRAM, PROGRAM_HASH),
    ):
        expect_equal(student.file_hash(text), want, call("file_hash", text))


@pytest.mark.promise("file_hash.utf8_bytes")
def test_file_hash_encodes_non_ascii_text_as_utf8(student):
    """Non-ASCII text is hashed as its UTF-8 bytes."""
    text = "naïve café ✓\n"
    want = "cee4f2e47a09a7dc548fe204affc7d63297552893ea3a0eaf726468444142e5b"
    expect_equal(student.file_hash(text), want, call("file_hash", text))


@pytest.mark.promise("guard_ok.passes_unchanged")
def test_guard_passes_when_locked_files_are_unchanged(student):
    """Unchanged locked files pass, also when an unlocked file (train.py) changed or a new file appeared
    (but not when eval.py changed)."""
    for files in (
        repo(),
        repo(**{"train.py": "lr=0.01\ndepth=5\nwidth=96\n"}),
        repo(**{"notes.txt": "hi\n"}),
    ):
        expect_verdict(student.guard_ok(files, LOCKED), True, call("guard_ok", files, LOCKED))
    files = repo(**{"eval.py": "scale=0.5\noffset=0\n"})
    expect_verdict(student.guard_ok(files, LOCKED), False, call("guard_ok", files, LOCKED))


@pytest.mark.promise("guard_ok.fails_on_change")
def test_guard_fails_when_one_character_of_a_locked_file_changes(student):
    """One changed character in one locked file fails the guard (scale 1 became 0, or a space was added);
    the same files with that character back pass."""
    for files in (repo(**{"eval.py": "scale=0\noffset=0\n"}), repo(**{"program.md": PROGRAM + " "})):
        expect_verdict(student.guard_ok(files, LOCKED), False, call("guard_ok", files, LOCKED))
    files = repo(**{"eval.py": "scale=1\noffset=0\n"})
    expect_verdict(student.guard_ok(files, LOCKED), True, call("guard_ok", files, LOCKED))


@pytest.mark.promise("guard_ok.missing_fails")
def test_guard_fails_when_a_locked_file_is_missing_or_renamed(student):
    """A missing locked file fails the guard: guard_ok returns False (no KeyError), also if it was renamed."""
    missing = repo()
    del missing["eval.py"]
    renamed = dict(missing, **{"eval_old.py": EVAL})
    for files in (missing, renamed):
        expect_verdict(student.guard_ok(files, LOCKED), False, call("guard_ok", files, LOCKED))
    restored = dict(renamed, **{"eval.py": EVAL})  # the file back under its name: the guard passes
    expect_verdict(student.guard_ok(restored, LOCKED), True, call("guard_ok", restored, LOCKED))


@pytest.mark.promise("guard_ok.empty_lock_passes")
def test_guard_with_no_locked_files_always_passes(student):
    """With an empty lock set there is nothing to check: the guard passes (locking eval.py, whose text
    changed, makes the same files fail)."""
    for files in (repo(), {}, repo(**{"eval.py": "scale=2\n"})):
        expect_verdict(student.guard_ok(files, {}), True, call("guard_ok", files, {}))
    files, locked = repo(**{"eval.py": "scale=2\n"}), {"eval.py": EVAL_HASH}
    expect_verdict(student.guard_ok(files, locked), False, call("guard_ok", files, locked))
