"""Intake: a file, folder or zip becomes the module text to run; broken modules are salvaged block by block,
and submissions that cannot be graded are refused with one sentence that says what to do."""

from __future__ import annotations

import ast
import codecs
import io
import json
import os
import struct
import zipfile
from pathlib import Path

import pytest

from grader.cli import main
from grader.errors import KitError
from grader.grading.intake import (
    MAX_MEMBER_BYTES,
    MAX_MEMBERS,
    IntakeError,
    Submission,
    as_read,
    copy_as_read,
    read_submission,
)
from grader.sandbox.isolation import remove_tree
from tests.kit.conftest import KIT

LAB = "def double(x):\n    return 2 * x\n"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4"


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", newline="")
    else:
        path.write_bytes(content)
    return path


def make_zip(path: Path, members: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(zipfile.ZipInfo(name), content, zipfile.ZIP_DEFLATED)
    return path


def top_level_lines(source: str) -> dict[str, int]:
    """Top-level def/class name -> the line it starts on (its decorators aside)."""
    return {
        node.name: node.lineno
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def intake_error(path: Path) -> str:
    with pytest.raises(IntakeError) as caught:
        read_submission(path)
    message = str(caught.value)
    assert "\n" not in message  # one sentence for the student
    return message


# --- 1. what a submission can be --------------------------------------------------------------------------


def test_a_py_file_is_the_module(tmp_path):
    submission = read_submission(write(tmp_path / "optimization_toolkit.py", LAB))
    assert submission == Submission(LAB, "optimization_toolkit.py", (), {}, None)


def test_a_missing_path_is_refused_by_name(tmp_path):
    missing = tmp_path / "nothing-here"
    message = intake_error(missing)
    assert "nothing-here" in message and "does not exist" in message
    assert issubclass(IntakeError, KitError)


# --- 2. folders and zips ------------------------------------------------------------------------------------


def test_nested_folders_are_walked(tmp_path):
    write(tmp_path / "hw5" / "week" / "optimization_toolkit.py", LAB)
    write(tmp_path / "hw5" / "README.md", "notes")
    submission = read_submission(tmp_path)
    assert submission.found_as == "hw5/week/optimization_toolkit.py"
    assert submission.source == LAB and submission.notes == ()


def test_hidden_files_macosx_and_pycache_are_skipped(tmp_path):
    for folder in [".git", "__MACOSX"]:
        write(tmp_path / folder / "optimization_toolkit.py", "raise SystemExit\n")
    write(tmp_path / ".optimization_toolkit.py", "raise SystemExit\n")
    write(tmp_path / "__pycache__" / "lab.py", "raise SystemExit\n")
    write(tmp_path / "src" / "lab.py", LAB)
    submission = read_submission(tmp_path)
    assert submission.found_as == "src/lab.py" and submission.source == LAB


def environment_folders(folder: Path, files: int) -> None:
    """A student's folder as it is often submitted: `files` files in each of a .git, a venv, a .venv,
    node_modules, __pycache__ and a venv of another name (its pyvenv.cfg says so), beside the module."""
    for name in (".git", "venv", ".venv", "node_modules", "__pycache__", "env"):
        for index in range(files):
            write(folder / name / "objects" / f"{index}.py", "raise SystemExit\n")
    write(folder / "env" / "pyvenv.cfg", "home = /usr/bin\n")
    write(folder / "optimization_toolkit.py", LAB)


def test_version_control_and_environment_folders_are_not_read_nor_counted(tmp_path):
    """Issue 33: a GitHub Classroom clone with its .git, or a venv beside the module, held more than 2,000
    entries and was refused (0 in `grader batch`). Now those folders are passed over unread, and the
    module is graded; what intake reads of it (the batch's private copy and hash, a cluster's parcel:
    `as_read`) holds none of them."""
    environment_folders(tmp_path / "clone", MAX_MEMBERS)
    submission = read_submission(tmp_path / "clone")
    assert submission.found_as == "optimization_toolkit.py" and submission.source == LAB
    names = [name for _, name, _ in as_read(tmp_path / "clone")]
    assert names == ["env", "optimization_toolkit.py", "optimization_toolkit.py"]  # env: its name alone
    copy = tmp_path / "copy"
    copy_as_read(tmp_path / "clone", copy)
    assert sorted(p.name for p in copy.iterdir()) == ["env", "optimization_toolkit.py"]
    assert read_submission(copy) == submission


def test_a_folder_named_like_an_environment_is_never_the_module(tmp_path):
    write(tmp_path / "venv" / "optimization_toolkit.py", "raise SystemExit\n")
    write(tmp_path / "node_modules" / "lab.py", "raise SystemExit\n")
    write(tmp_path / "work" / "pyvenv.cfg", "home = /usr/bin\n")
    write(tmp_path / "work" / "optimization_toolkit.py", "raise SystemExit\n")
    write(tmp_path / "lab.py", LAB)
    assert read_submission(tmp_path).found_as == "lab.py"


def test_a_linked_file_is_not_followed(tmp_path):
    secret = write(tmp_path / "solutions" / "optimization_toolkit.py", "SECRET = 1\n")
    folder = tmp_path / "submission"
    write(folder / "lab.py", LAB)
    (folder / "optimization_toolkit.py").symlink_to(secret)
    assert read_submission(folder).found_as == "lab.py"


def nest(folder: Path, depth: int) -> None:
    """`depth` folders one inside the other in `folder` (each opened from its parent: no long paths)."""
    parent = os.open(folder, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=parent)
        child = os.open("d", os.O_RDONLY, dir_fd=parent)
        os.close(parent)
        parent = child
    os.close(parent)


def test_a_folder_nested_deeper_than_python_recurses_is_refused_with_a_message(tmp_path):
    """Attack: 1,500 folders one inside the other beside the module. Before: os.walk's RecursionError
    escaped `grader grade` (a traceback, no results.json) and the Otter path's take_submission."""
    (tmp_path / "optimization_toolkit.py").write_text("x = 1\n")
    nest(tmp_path, 1500)
    try:
        with pytest.raises(IntakeError, match="nests folders more than 64 deep"):
            read_submission(tmp_path)
    finally:
        remove_tree(tmp_path / "d")  # pytest's own clean-up of old runs recurses too
    shallow = tmp_path / "shallow"
    shallow.mkdir()
    (shallow / "optimization_toolkit.py").write_text("x = 1\n")
    nest(shallow, 63)
    assert read_submission(shallow).found_as == "optimization_toolkit.py"


def test_grader_grade_of_a_folder_nested_deeper_than_python_recurses_says_so(tmp_path, capsys):
    """As root, `grader grade` grades a private copy of the folder (issue 23: its command line names no
    path a worker could read): the copy stops below intake's depth, so the same one-line refusal comes,
    never copytree's RecursionError."""
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "optimization_toolkit.py").write_text("x = 1\n")
    nest(submission, 1500)
    out = tmp_path / "results.json"
    try:
        code = main(["--root", str(KIT), "grade", str(submission), "-o", str(out), "--exercise", "8"])
    finally:
        remove_tree(submission / "d")
    assert code == 0, capsys.readouterr()
    assert "nests folders more than 64 deep" in json.loads(out.read_text())["output"]


def test_a_zip_with_a_nested_folder(tmp_path):
    archive = make_zip(tmp_path / "sub.zip", {"hw5/": b"", "hw5/code/optimization_toolkit.py": LAB})
    submission = read_submission(archive)
    assert submission.found_as == "hw5/code/optimization_toolkit.py" and submission.source == LAB


def test_a_zip_is_known_by_its_bytes_not_its_name(tmp_path):
    archive = make_zip(tmp_path / "upload.dat", {"optimization_toolkit.py": LAB})
    assert read_submission(archive).source == LAB


def test_a_zip_skips_macosx_and_hidden_members(tmp_path):
    archive = make_zip(
        tmp_path / "sub.zip",
        {"__MACOSX/._optimization_toolkit.py": PNG, "hw/.ipynb_checkpoints/lab.py": "x\n", "hw/lab.py": LAB},
    )
    assert read_submission(archive).found_as == "hw/lab.py"


def test_zip_slip_names_are_only_names(tmp_path, monkeypatch):
    work = tmp_path / "deep" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    archive = make_zip(tmp_path / "deep" / "evil.zip", {"../../optimization_toolkit.py": LAB})
    before = sorted(tmp_path.rglob("*"))
    submission = read_submission(archive)
    assert submission.found_as == "optimization_toolkit.py" and submission.source == LAB
    assert sorted(tmp_path.rglob("*")) == before  # nothing was extracted anywhere
    assert not (tmp_path / "optimization_toolkit.py").exists()


def test_a_zip_with_too_many_members_is_refused(tmp_path):
    members = {f"junk/{i}.txt": b"" for i in range(MAX_MEMBERS)} | {"optimization_toolkit.py": LAB}
    message = intake_error(make_zip(tmp_path / "many.zip", members))
    assert "many.zip" in message and str(MAX_MEMBERS) in message


def test_a_zip_member_bigger_than_the_limit_is_refused(tmp_path):
    members = {"optimization_toolkit.py": LAB, "data.bin": bytes(MAX_MEMBER_BYTES + 1)}
    message = intake_error(make_zip(tmp_path / "big.zip", members))
    assert "data.bin" in message and "5 MB" in message


def test_a_zip_that_unpacks_to_too_much_in_total_is_refused(tmp_path):
    members = {f"part{i}.bin": bytes(MAX_MEMBER_BYTES) for i in range(11)} | {"optimization_toolkit.py": LAB}
    assert "50 MB" in intake_error(make_zip(tmp_path / "total.zip", members))


def test_a_zip_member_that_claims_to_be_small_but_inflates_big_is_refused(tmp_path):
    archive = make_zip(tmp_path / "bomb.zip", {"optimization_toolkit.py": b"#" * (MAX_MEMBER_BYTES * 2)})
    data = bytearray(archive.read_bytes())
    central = data.index(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, 1000)  # the central directory's uncompressed size
    struct.pack_into("<I", data, 22, 1000)  # and the local header's
    archive.write_bytes(bytes(data))
    with zipfile.ZipFile(archive) as check:
        assert check.getinfo("optimization_toolkit.py").file_size == 1000  # the header now lies
    message = intake_error(archive)
    assert "optimization_toolkit.py" in message and "bomb.zip" in message


def test_a_file_bigger_than_the_limit_is_refused_while_reading(tmp_path):
    write(tmp_path / "optimization_toolkit.py", b"#" * (MAX_MEMBER_BYTES + 1))
    assert "5 MB" in intake_error(tmp_path)


def test_a_damaged_zip_is_refused(tmp_path):
    archive = write(tmp_path / "sub.zip", b"PK\x03\x04" + b"\x00" * 40)
    assert "sub.zip" in intake_error(archive)


# --- 3. choosing the module ---------------------------------------------------------------------------------


def test_the_shallowest_optimization_toolkit_wins(tmp_path):
    write(tmp_path / "old" / "optimization_toolkit.py", "OLD = 1\n")
    write(tmp_path / "optimization_toolkit.py", LAB)
    write(tmp_path / "helpers.py", "x = 1\n")
    assert read_submission(tmp_path).found_as == "optimization_toolkit.py"


def test_two_optimization_toolkits_at_the_same_depth_are_refused(tmp_path):
    write(tmp_path / "a" / "optimization_toolkit.py", LAB)
    write(tmp_path / "b" / "optimization_toolkit.py", LAB)
    message = intake_error(tmp_path)
    assert "a/optimization_toolkit.py" in message and "b/optimization_toolkit.py" in message


def test_two_candidates_are_refused(tmp_path):
    write(tmp_path / "mine.py", LAB)
    write(tmp_path / "other.py", LAB)
    message = intake_error(tmp_path)
    assert "'mine.py'" in message and "'other.py'" in message
    assert message.endswith("submit one file named optimization_toolkit.py")


def test_many_candidates_are_listed_five_at_most(tmp_path):
    for i in range(8):
        write(tmp_path / f"part{i}.py", LAB)
    message = intake_error(tmp_path)
    assert "'part4.py'" in message and "part5.py" not in message and "and 3 more" in message


def test_conftest_and_a_lab_file_pick_the_lab_file(tmp_path):
    write(tmp_path / "conftest.py", "import pytest\n")
    write(tmp_path / "test_lab.py", "def test_x(): pass\n")
    write(tmp_path / "lab_test.py", "def test_y(): pass\n")
    write(tmp_path / "lab.py", LAB)
    submission = read_submission(tmp_path)
    assert submission.found_as == "lab.py"
    assert submission.notes == ("Graded 'lab.py' as optimization_toolkit.py.",)


@pytest.mark.parametrize(
    "name",
    [
        "optimization_toolkit (1).py",
        "optimization_toolkit-2.py",
        "optimization_toolkit_v2.py",
        "Optimization_Toolkit.py",
    ],
)
def test_a_renamed_lab_is_preferred_to_other_files(tmp_path, name):
    write(tmp_path / "hw5" / name, LAB)
    write(tmp_path / "helpers.py", "x = 1\n")
    submission = read_submission(tmp_path)
    assert submission.found_as == f"hw5/{name}" and submission.source == LAB
    assert submission.notes == (f"Graded 'hw5/{name}' as optimization_toolkit.py.",)


def test_only_a_notebook_is_refused_saying_what_was_found(tmp_path):
    write(tmp_path / "lab.ipynb", "{}")
    write(tmp_path / "notes.txt", "hi")
    message = intake_error(tmp_path)
    assert "no .py file" in message and "'lab.ipynb'" in message and "'notes.txt'" in message
    assert "optimization_toolkit.py" in message


def test_only_files_that_are_not_the_lab_are_refused(tmp_path):
    write(tmp_path / "test_lab.py", "def test_x(): pass\n")
    message = intake_error(tmp_path)
    assert "'test_lab.py'" in message and "submit optimization_toolkit.py" in message


def test_an_empty_folder_is_refused(tmp_path):
    assert "no files" in intake_error(tmp_path)


# --- 4. decoding --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("content", [b"", b"  \n\t\r\n"])
def test_an_empty_module_is_refused(tmp_path, content):
    message = intake_error(write(tmp_path / "optimization_toolkit.py", content))
    assert "'optimization_toolkit.py' is empty" in message


@pytest.mark.parametrize("content", [PNG, bytes(range(1, 256)) * 4, b"A = 1\n\x00\x00\x00\x00B = 2\n"])
def test_a_binary_file_is_refused(tmp_path, content):
    message = intake_error(write(tmp_path / "optimization_toolkit.py", content))
    assert "is not a text file" in message


def test_a_utf8_bom_is_dropped(tmp_path):
    submission = read_submission(write(tmp_path / "optimization_toolkit.py", codecs.BOM_UTF8 + LAB.encode()))
    assert submission.source == LAB and submission.notes == ()


@pytest.mark.parametrize(
    "bom, codec",
    [
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
        (codecs.BOM_UTF32_LE, "utf-32-le"),
        (codecs.BOM_UTF32_BE, "utf-32-be"),
        (b"", "utf-16-le"),  # no BOM: the NULs give it away
    ],
)
def test_utf16_and_utf32_are_decoded(tmp_path, bom, codec):
    text = '# é\nNAME = "café"\n' + LAB
    submission = read_submission(write(tmp_path / "optimization_toolkit.py", bom + text.encode(codec)))
    assert submission.source == text and submission.notes == ()


def test_crlf_and_lone_cr_become_lf(tmp_path):
    submission = read_submission(write(tmp_path / "optimization_toolkit.py", b"A = 1\r\nB = 2\rC = 3\r\n"))
    assert submission.source == "A = 1\nB = 2\nC = 3\n"


def test_a_cp1252_byte_in_a_comment_is_replaced_with_a_note(tmp_path):
    content = b"def double(x):\n    return 2 * x\n# caf\xe9 au lait\n"
    submission = read_submission(write(tmp_path / "optimization_toolkit.py", content))
    assert submission.source == "def double(x):\n    return 2 * x\n# caf\ufffd au lait\n"
    assert len(submission.notes) == 1 and submission.notes[0].startswith("Line 3 of ")
    assert submission.syntax_error is None


def run_as_utf8_file(source: str) -> dict:
    """What the module defines when written to a file as UTF-8 and run, as the worker does (Python then
    honours a coding cookie in the file)."""
    namespace: dict = {}
    exec(compile(source.encode("utf-8"), "optimization_toolkit.py", "exec", dont_inherit=True), namespace)
    return namespace


def test_a_coding_cookie_is_honoured(tmp_path):
    content = '#!/usr/bin/env python\n# -*- coding: latin-1 -*-\nNAME = "café"\n'.encode("latin-1")
    submission = read_submission(write(tmp_path / "optimization_toolkit.py", content))
    assert 'NAME = "café"' in submission.source and submission.notes == ()
    # the text is decoded already: its cookie now says so, and the line numbers stay
    assert submission.source.split("\n")[1] == "# -*- coding: utf-8 -*-"
    assert run_as_utf8_file(submission.source)["NAME"] == "café"


def test_an_unknown_coding_cookie_is_read_as_utf8_with_a_note(tmp_path):
    content = '# coding: klingon\nNAME = "café"\n'.encode()
    submission = read_submission(write(tmp_path / "optimization_toolkit.py", content))
    assert 'NAME = "café"' in submission.source
    assert len(submission.notes) == 1 and "klingon" in submission.notes[0]
    assert run_as_utf8_file(submission.source)["NAME"] == "café"


# --- 5. compiling and salvage -------------------------------------------------------------------------------

MODULE = '''\
"""A lab.

Part 1: numbers
- item
"""
import math


def first(x):
    return x + 1


@staticmethod
def second(x:
    return x


class Third:
    """Doc
at column 0
"""

    def method(self):
        return math.pi


def fourth(
    a: int,
) -> int:
    return a
'''


def salvage(tmp_path: Path, module: str) -> Submission:
    return read_submission(write(tmp_path / "optimization_toolkit.py", module))


def test_a_syntax_error_in_one_function_keeps_the_others_on_their_lines(tmp_path):
    submission = salvage(tmp_path, MODULE)
    fixed = MODULE.replace("def second(x:", "def second(x):")
    expected = top_level_lines(fixed)
    kept = top_level_lines(submission.source)
    assert set(kept) == {"first", "Third", "fourth"}
    assert kept == {name: expected[name] for name in kept}  # same lines as in the student's file
    assert submission.source.count("\n") == MODULE.count("\n")
    assert submission.source.startswith('"""A lab.\n\nPart 1: numbers\n- item\n"""\nimport math\n')  # whole
    assert "@staticmethod" not in submission.source  # the decorator went with its function
    assert submission.broken == {"second": "line 14: '(' was never closed"}
    assert submission.syntax_error is not None and submission.syntax_error.startswith("line 14: ")
    assert len(submission.notes) == 1 and "second (line 14: " in submission.notes[0]
    assert "syntax error" in submission.notes[0]  # the note tells the student about the error
    compile(submission.source, "salvaged", "exec", dont_inherit=True)


def test_a_function_body_error_after_a_column_0_signature_is_reported_where_it_is(tmp_path):
    module = "def f(\n    a,\n):\n    return a +\n\n\ndef g():\n    return 2\n"
    submission = salvage(tmp_path, module)
    assert top_level_lines(submission.source) == {"g": 7}
    assert submission.broken == {"f": "line 4: invalid syntax"}


def test_a_syntax_error_at_top_level_keeps_every_function(tmp_path):
    module = "import math\n\nX = = 1\n\n\ndef f():\n    return 1\n\n\nclass K:\n    pass\n"
    submission = salvage(tmp_path, module)
    assert top_level_lines(submission.source) == {"f": 6, "K": 10}
    assert "import math" in submission.source and "X = = 1" not in submission.source
    assert submission.broken == {}
    assert submission.syntax_error == "line 3: invalid syntax (`X = = 1`)"
    assert any("line 3" in note for note in submission.notes)


def test_an_unterminated_triple_quoted_string_drops_only_its_function(tmp_path):
    module = '@cache\ndef f():\n    """Never closed.\n    return 1\n\n\n'
    module += "def g():\n    return 2\n\n\ndef h():\n    return 3\n"
    submission = salvage(tmp_path, module)
    assert top_level_lines(submission.source) == {"g": 7, "h": 11}
    assert submission.broken["f"].startswith("line 3: unterminated triple-quoted string literal")
    assert submission.syntax_error.startswith("line 3: unterminated triple-quoted string literal")
    assert len(submission.notes) == 1  # the decorator went with its function, not as lines of its own


def test_top_level_if_else_and_try_except_stay_whole(tmp_path):
    module = "try:\n    import numpy\nexcept ImportError:\n    numpy = None\n"
    module += "if numpy:\n    A = 1\nelif A:\n    A = 3\nelse:\n    A = 2\nx = (\n"
    submission = salvage(tmp_path, module)
    assert submission.source == module.replace("x = (", "")
    assert submission.broken == {}


def test_the_last_definition_of_a_name_is_the_one_that_counts(tmp_path):
    module = "def f(:\n    pass\n\n\ndef f():\n    return 1\n\n\n"
    module += "def g():\n    return 1\n\n\ndef g(:\n    pass\n"
    submission = salvage(tmp_path, module)
    assert top_level_lines(submission.source) == {"f": 5, "g": 9}
    assert submission.broken == {"g": "line 13: invalid syntax"}  # the graded f is the student's last one


def test_a_future_import_that_compiles_alone_but_not_in_place_is_dropped(tmp_path):
    module = "import math\nfrom __future__ import annotations\n\n\n"
    module += "def f(:\n    pass\n\n\ndef g():\n    return 1\n"
    submission = salvage(tmp_path, module)
    assert top_level_lines(submission.source) == {"g": 9}
    assert "__future__" not in submission.source and "import math" in submission.source
    compile(submission.source, "salvaged", "exec", dont_inherit=True)


def test_intake_never_runs_the_submission(tmp_path):
    marker = tmp_path / "ran"
    module = f"open({str(marker)!r}, 'w').close()\n\n\ndef f(:\n    pass\n"
    submission = salvage(tmp_path, module)
    assert "open(" in submission.source  # kept, compiled, and still not run
    assert not marker.exists()


# --- 6. determinism -----------------------------------------------------------------------------------------


def test_the_same_submission_gives_the_same_result(tmp_path):
    members = {"b/lab (1).py": MODULE.encode("utf-16"), "a/notes.txt": "x", "conftest.py": "x = 1\n"}
    archive = make_zip(tmp_path / "sub.zip", members)
    first, again = read_submission(archive), read_submission(archive)
    assert first == again
    assert first.found_as == "b/lab (1).py" and first.broken == {"second": "line 14: '(' was never closed"}


def test_a_zip_read_from_memory_matches_the_same_folder(tmp_path):
    members = {"hw/optimization_toolkit.py": MODULE, "hw/README.md": "read me"}
    folder = tmp_path / "folder"
    for name, content in members.items():
        write(folder / name, content)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    zipped = write(tmp_path / "sub.zip", buffer.getvalue())
    assert read_submission(folder) == read_submission(zipped)
