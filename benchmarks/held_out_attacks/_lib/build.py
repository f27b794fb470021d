"""Build each attack's optimization_toolkit.py: a base module (the reference or the stub, from the kit
given) + the helpers (fp.py, visible_fps.py) + the attack's tail.py, whose `# include: NAME` lines stand for
_lib/NAME (a channel's code shared by its sender and receiver). Run: python3 build.py --kit KIT"""
import argparse
import json
import pathlib

here = pathlib.Path(__file__).resolve().parent
attacks = here.parent

def expanded(tail: str) -> str:
    """`tail` with each `# include: NAME` line replaced by the text of _lib/NAME."""
    return "".join(
        (here / line.split(":", 1)[1].strip()).read_text() if line.startswith("# include:") else line
        for line in tail.splitlines(keepends=True)
    )


def build(kit: pathlib.Path) -> None:
    for folder in sorted(p for p in attacks.iterdir() if (p / "attack.json").is_file()):
        meta = json.loads((folder / "attack.json").read_text())
        for variant, tail_name in meta.get("variants", {"": "tail.py"}).items():
            base = meta.get("base", "reference")
            if base == "none":
                continue
            source = (kit / ("solutions" if base == "reference" else "student") / "optimization_toolkit.py").read_text()
            parts = [source, (here / "fp.py").read_text(), (here / "visible_fps.py").read_text()]
            tail = folder / tail_name
            if tail.is_file():
                parts.append(expanded(tail.read_text()))
            out = folder / (f"submission{('-' + variant) if variant else ''}") / "optimization_toolkit.py"
            out.parent.mkdir(exist_ok=True)
            out.write_text("\n\n".join(parts))

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--kit", required=True)
    build(pathlib.Path(p.parse_args().kit))
