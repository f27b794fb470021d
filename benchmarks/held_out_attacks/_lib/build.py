"""Build each attack's optimization_toolkit.py: a base module (the reference or the stub, from the kit
given) + the helpers (fp.py, visible_fps.py) + the attack's tail.py. Run: python3 build.py --kit KIT"""
import argparse
import json
import pathlib

here = pathlib.Path(__file__).resolve().parent
attacks = here.parent

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
                parts.append(tail.read_text())
            out = folder / (f"submission{('-' + variant) if variant else ''}") / "optimization_toolkit.py"
            out.parent.mkdir(exist_ok=True)
            out.write_text("\n\n".join(parts))

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--kit", required=True)
    build(pathlib.Path(p.parse_args().kit))
