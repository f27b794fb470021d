"""Attacks on what the grader itself does with a submission's files and names, before any sandbox (issue
23, round 3's leftovers): the private copy, intake's reading, the batch's content hash and roster, a zip's
directory. Each reads only what intake reads, at a cost bounded by intake's limits, whatever is there:
devices, pipes, sockets, sparse files, a million names. Figures are in each test's docstring."""

from __future__ import annotations

import os
import socket
import zipfile
from pathlib import Path

import pytest

from grader.batch.roster import content_hash, scan_source
from grader.grading import intake
from grader.grading.intake import MAX_MEMBERS, IntakeError, read_submission
from grader.sandbox import isolation

LAB = "def double(x):\n    return 2 * x\n"


def outcome(path: Path) -> tuple:
    """What intake makes of `path`: the module and notes, or the refusal."""
    try:
        found = read_submission(path)
    except IntakeError as error:
        return ("refused", str(error))
    return ("graded", found.found_as, found.source, found.notes, found.syntax_error)


def disk_bytes(folder: Path) -> int:
    """What the files under `folder` take on disk (holes in sparse files aside)."""
    return sum(os.lstat(Path(d, f)).st_blocks * 512 for d, _, files in os.walk(folder) for f in files)


def hostile_folder(folder: Path) -> Path:
    """The module beside a pipe, a socket, a 2 GB sparse file and a link to a secret."""
    (folder / "notes").mkdir(parents=True)
    (folder / "optimization_toolkit.py").write_text(LAB)
    os.mkfifo(folder / "notes" / "pipe")
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind(str(folder / "notes" / "socket"))
    with open(folder / "notes" / "data.bin", "wb") as sparse:
        sparse.truncate(2 << 30)
    (folder / "secret.py").symlink_to("/etc/passwd")
    return folder


def test_a_private_copy_holds_only_what_intake_reads_whatever_the_folder_holds(tmp_path):
    """Attack: a folder submission with a pipe, a socket and a 2 GB sparse file beside the module.
    Before: `private_copy` (as root, `grader grade` and every `grader batch` child) raised shutil.Error
    on the pipe and the socket (a traceback, no results.json), copied a 4 GB sparse file as 4,097 MB of
    disk in 68 s, and a device node (/dev/zero's) until the disk was full (92 s). After: 0.1 s, under
    1 MB, and intake reads the copy as it reads the original."""
    folder = hostile_folder(tmp_path / "alice")
    copy = intake.private_copy(folder)
    try:
        assert disk_bytes(copy.parent) < 1 << 20
        assert outcome(copy) == outcome(folder) == ("graded", "optimization_toolkit.py", LAB, (), None)
        assert not (copy / "secret.py").exists() and (copy / "notes" / "data.bin").stat().st_size == 0
    finally:
        isolation.remove_tree(copy.parent)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_node_in_a_folder_is_never_opened(tmp_path):
    """Attack: /dev/zero's device node (char 1, 5) in a folder submission. Before: the private copy read
    it until the grader's disk was full (92 s, every neighbour's results unwritable), the content hash
    for ever. After: a name, never opened."""
    folder = tmp_path / "bob"
    folder.mkdir()
    (folder / "optimization_toolkit.py").write_text(LAB)
    # A device of no driver (major 240, kept for local use): opening it fails at once, so that on main
    # this test fails without filling the disk as /dev/zero's node (1, 5) did; here neither is opened.
    os.mknod(folder / "zero", 0o600 | 0o020000, os.makedev(240, 0))
    copy = intake.private_copy(folder)
    try:
        assert disk_bytes(copy.parent) < 1 << 20 and outcome(copy) == outcome(folder)
    finally:
        isolation.remove_tree(copy.parent)
    assert len(content_hash(folder)) == 64


def test_a_folder_of_more_entries_than_the_limit_is_refused_reading_no_more_than_the_limit(tmp_path):
    """Attack: the module beside 5,000 empty files (200,000 in the measure). Before: no limit for a folder
    (a zip had one): 200,000 files cost 43 s and 184 MB to copy, 9.6 s to read and 10.9 s to hash.
    After: refused as a zip of as many members is, its copy holding at most the limit + 1 names."""
    folder = tmp_path / "carol"
    (folder / "junk").mkdir(parents=True)
    (folder / "optimization_toolkit.py").write_text(LAB)
    for i in range(5000):
        (folder / "junk" / f"{i}.txt").touch()
    refused = outcome(folder)
    assert refused[0] == "refused" and f"more than {MAX_MEMBERS} files" in refused[1]
    copy = intake.private_copy(folder)
    try:
        assert sum(len(d) + len(f) for _, d, f in os.walk(copy)) == MAX_MEMBERS + 1
        assert outcome(copy) == refused
    finally:
        isolation.remove_tree(copy.parent)


def test_the_content_hash_reads_no_pipe_and_follows_what_intake_grades(tmp_path):
    """Attack: a pipe in a batch submission's folder. Before: the batch's content hash opened it and
    waited for ever (the whole batch hung before grading anyone). After: the hash covers the names and
    the module's bytes: it changes with the module, not with a file intake never reads."""
    folder = hostile_folder(tmp_path / "dana")
    before = content_hash(folder)
    (folder / "notes" / "readme.txt").write_text("x")
    after = content_hash(folder)
    assert after != before  # a new name
    (folder / "notes" / "readme.txt").write_text("y")
    assert content_hash(folder) == after  # bytes intake never reads
    (folder / "optimization_toolkit.py").write_text(LAB + "\n# v2\n")
    assert content_hash(folder) != after


def test_a_pipe_or_socket_in_a_batch_folder_is_skipped_as_no_submission(tmp_path):
    """Attack: a pipe named like a submission at the top of a batch folder. Before: a row of its own,
    whose hash waited for ever. After: skipped, saying why."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "ada.py").write_text(LAB)
    os.mkfifo(source / "eve.py")
    roster = scan_source(source, tmp_path / "scratch")
    assert [e.file for e in roster.entries] == ["ada.py"]
    assert [name for name, _ in roster.skipped] == ["eve.py"]


def test_a_zip_larger_than_the_limit_is_refused_before_its_directory_is_read(tmp_path, monkeypatch):
    """Attack: a zip of a million empty members (88 MB). Before: zipfile read its whole directory first:
    8.6 s and 562 MB of the grader's memory, before the member limit refused it. After: its size and
    its end record's member count are checked first (a zip past 50 MB, or claiming more members than
    the limit, is refused without a directory read)."""
    many = tmp_path / "many.zip"
    with zipfile.ZipFile(many, "w") as archive:
        for i in range(MAX_MEMBERS + 1):
            archive.writestr(str(i), b"")
        archive.writestr("optimization_toolkit.py", LAB)
    padded = tmp_path / "padded.zip"  # 60 MB of (sparse) nothing before a small valid zip
    with open(padded, "wb") as out:
        out.truncate(60 << 20)
        out.seek(60 << 20)
        with zipfile.ZipFile(out, "a") as archive:
            archive.writestr("optimization_toolkit.py", LAB)

    def directory_read(*args, **kwargs):
        raise AssertionError("the zip's directory was read")

    monkeypatch.setattr(zipfile.ZipFile, "_RealGetContents", directory_read)
    assert outcome(many) == ("refused", f"many.zip holds more than {MAX_MEMBERS} files: submit "
                             "optimization_toolkit.py on its own")  # fmt: skip
    assert outcome(padded) == (
        "refused",
        "padded.zip is larger than 50 MB: submit optimization_toolkit.py on its own",
    )


def test_a_module_of_a_million_broken_lines_costs_a_bounded_number_of_compiles(tmp_path, monkeypatch):
    """Attack: a module of one-line blocks that do not compile ("$", 2.6 million in the measure).
    Before: salvage compiled each block alone, twice (alone, then as incomplete input), unbudgeted:
    over 100 s of the grader's CPU for 5 MB, once in `grader grade` and again in its pytest. After:
    every compile counts COMPILE_COST against SALVAGE_BUDGET, and past it the rest of the file is
    judged as one block: 4 s for the same file."""
    from grader.grading import compiling

    calls = []
    real_compile = compile

    def counted(*args, **kwargs):
        calls.append(len(args[0]))
        return real_compile(*args, **kwargs)

    monkeypatch.setattr(compiling, "compile", counted, raising=False)
    text = LAB + "$\n" * 60_000 + LAB.replace("double", "triple")
    source, _, _, syntax_error = compiling.compiled_here(text, "optimization_toolkit.py")  # this process's
    assert len(calls) <= compiling.SALVAGE_BUDGET // compiling.COMPILE_COST + 10
    assert "def double" in source and syntax_error == "line 3: invalid syntax (`$`)"


def test_a_module_larger_than_a_lab_module_needs_is_refused(tmp_path):
    """Attack: 5 MB of valid code in one module (a call chain, a stack of decorators). Before: graded,
    its compile in the grader's own process took up to 1.8 GB and 8 s, twice a grading. After: a module
    past 1 MB (the reference is 70 KB) is refused in one line; compiling 1 MB costs 350 MB and 2 s."""
    module = tmp_path / "optimization_toolkit.py"
    module.write_text("@x\n" * 400_000 + "def f(): pass\n")
    assert outcome(module) == (
        "refused",
        "'optimization_toolkit.py' is larger than 1 MB, more than a lab module needs: "
        "submit optimization_toolkit.py with your code alone",
    )


def test_no_two_names_of_a_batch_share_a_results_folder():
    """Attack: beside "a b.py", a file named as its results folder was ("a_b.py-5d4acf84": its name
    made plain, tagged with 8 hex digits of its hash). Before: both wrote one folder (each one's
    results.json and batch.json over the other's; a 255-byte name with a space gave a folder name past
    NAME_MAX: the row crashed on every run). After: a plain name that ends like a tag is tagged too,
    with 16 digits, and a changed name is cut to 100 characters."""
    import hashlib

    from grader.batch.folders import submission_folder
    from grader.batch.roster import Entry

    tag = hashlib.sha256(b"a b.py").hexdigest()
    names = ["a b.py", f"a_b.py-{tag[:8]}", f"a_b.py-{tag[:16]}", "café.py", "cafe\u0301.py", "x " * 127]
    folders = [submission_folder(Path("/results"), Entry(name, Path(name))) for name in names]
    assert len(set(folders)) == len(names)
    assert all(len(folder.name.encode()) <= 255 for folder in folders)
    assert submission_folder(Path("/results"), Entry("submission_123", Path("s"))).name == "submission_123"


def test_a_folder_swapped_for_a_link_after_it_was_listed_is_not_followed(tmp_path, monkeypatch):
    """Attack (a drop folder the student can still write while it is graded): once intake has listed
    `hw/`, it is replaced by a link to a folder of the solutions. Before: the module was opened by its
    path, as root: the solution's file was graded as the student's (and the private copy held it).
    After: each step below the submission's folder is opened from the one above, no step a link."""

    secret = tmp_path / "solutions"
    secret.mkdir()
    (secret / "optimization_toolkit.py").write_text("SOLUTION = 1\n")
    folder = tmp_path / "eve"
    (folder / "hw").mkdir(parents=True)
    (folder / "hw" / "optimization_toolkit.py").write_text(LAB)
    listing = intake.listing

    def swapped(where: Path, limit: int):
        found = listing(where, limit)
        if where == folder / "hw":
            (folder / "hw").rename(folder / "was")
            (folder / "hw").symlink_to(secret)
        return found

    monkeypatch.setattr(intake, "listing", swapped)
    refused = outcome(folder)
    assert refused[0] == "refused" and "could not read 'hw/optimization_toolkit.py'" in refused[1]
    (folder / "hw").unlink()
    (folder / "was").rename(folder / "hw")
    copy = intake.private_copy(folder)
    try:
        assert "SOLUTION" not in (copy / "hw" / "optimization_toolkit.py").read_text()
    finally:
        isolation.remove_tree(copy.parent)


def test_a_pipe_given_to_grader_grade_gets_a_results_json_that_names_it(tmp_path, capsys):
    """Attack: `grader grade` of a named pipe (a drop folder's entry). Before, as root: the private copy
    raised shutil's SpecialFileError: "the grading failed", exit 3 and no results.json. After (first
    fix): a results.json naming the copy's random folder (/tmp/optlab-submission-.../pipe.py: not the
    same twice). Now: the same one-line refusal, naming the pipe by its name, every time."""
    import json

    from grader.cli import main
    from tests.kit.conftest import KIT

    os.mkfifo(tmp_path / "pipe.py")
    outputs = []
    for attempt in range(2):
        out = tmp_path / f"results{attempt}.json"
        code = main(
            ["--root", str(KIT), "grade", str(tmp_path / "pipe.py"), "-o", str(out), "--exercise", "8"]
        )
        assert code == 0, capsys.readouterr()
        outputs.append(json.loads(out.read_text())["output"])
    assert outputs[0] == outputs[1] and "'pipe.py' is neither a file nor a folder" in outputs[0]


@pytest.mark.parametrize("cookie", ["punycode", "idna"])
def test_a_coding_cookie_for_domain_names_is_read_as_utf8(tmp_path, cookie):
    """Attack: `# coding: punycode` on a module. Before: punycode's UnicodeError (not a
    UnicodeDecodeError) escaped intake: a traceback and no results.json; and its decoder is quadratic
    (1 MB: over 120 s of the grader's CPU). After: read as UTF-8, with a note, in 0.1 s."""
    module = tmp_path / "optimization_toolkit.py"
    module.write_bytes(f"# coding: {cookie}\n".encode() + LAB.encode() + b"# \xc3\xa9-abc-\n")
    found = read_submission(module)
    assert "def double" in found.source and found.source.startswith("# coding: utf-8\n")
    assert any(f"declares an encoding ('{cookie}')" in note for note in found.notes)


def test_a_module_that_crashes_pythons_compiler_is_refused_and_the_grader_lives(tmp_path):
    """Attack: one comprehension of 60,000 `for` clauses (948 KB). Before: CPython 3.11's compiler
    overflowed its C stack in the grader's own process: a segmentation fault of `grader grade` (no
    results.json), of its pytest, and of `grader batch` itself at its similarity report (no grades.csv
    for anyone). After: compiled in a bounded process of its own (grader.grading.compiling.COMPILE_MEMORY and
    COMPILE_SECONDS), and refused in one line when that process dies. Run in a child here, so that a
    crash fails this test instead of ending the session."""
    import subprocess
    import sys

    from tests.kit.conftest import KIT

    module = tmp_path / "optimization_toolkit.py"
    module.write_text("x = [y " + "".join(f"for a{i} in b " for i in range(60_000)) + "]\n" + LAB)
    code = (
        "import sys; from pathlib import Path; "
        "from grader.grading.intake import IntakeError, read_submission\n"
        "try:\n    read_submission(Path(sys.argv[1]))\n    print('graded')\n"
        "except IntakeError as error:\n    print(error)\n"
    )
    run = subprocess.run([sys.executable, "-c", code, str(module)], capture_output=True, text=True, cwd=KIT)
    assert run.returncode == 0, run.stderr[-500:]
    refused = (
        "'optimization_toolkit.py' is too large or too deeply nested for Python's compiler (it crashed or "
        "ran out of memory): submit optimization_toolkit.py with plainer code\n"
    )
    # 3.11.7, 3.12.1 and 3.13.0 crash on it; a Python whose compiler stops at a recursion limit instead
    # reports the line as too deeply nested, and grades the rest
    assert run.stdout in (refused, "graded\n")


def test_a_compiling_process_that_cannot_start_fails_the_grading_with_a_results_json(tmp_path, monkeypatch):
    """Where intake's compiling process cannot be started (the machine's process limit), the grading
    fails as the machine's fault (results.json says so, exit GRADING_FAILED, graded again by a batch),
    never a traceback without results.json, and the similarity report leaves that submission out."""
    import json
    import subprocess

    from grader.grading.grade import grade
    from tests.kit.conftest import KIT

    def no_process(*args, **kwargs):
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(subprocess, "run", no_process)
    module = tmp_path / "optimization_toolkit.py"
    module.write_text(LAB)
    graded = grade(KIT, module, tmp_path / "results.json")
    document = json.loads((tmp_path / "results.json").read_text())
    assert (
        graded.failed and "could not start a process to compile" in document["extra_data"]["grading_failed"]
    )
    from grader.batch.roster import Entry
    from grader.batch.similarity import compare
    from grader.grading.grade import kit_manifest

    entries = [Entry("ada.py", module), Entry("ben.py", module)]
    assert compare(entries, kit_manifest(KIT), "") == ([], ["ada.py", "ben.py"])
