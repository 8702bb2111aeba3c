"""Packaging beside pyproject.toml: puts specviz's data into the wheel, under specviz/_data/.

specviz reads assets/ (the bundled models, the page's CSS and JavaScript), spaces.yaml, the
held-out benchmark prompts and the lesson plan (docs/workshop.md, shown in the Workshop tab) from the checkout it runs in (specviz/paths.py). A wheel has no
checkout, so build_py copies those files into the package as specviz/_data/<same path>, where
paths.data_root finds them when spaces.yaml is not beside the package. Not copied: the README's
screenshot and the benchmark results (large, and nothing reads them at run time).
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
DATA = ["spaces.yaml", "assets", "benchmarks/heldout-prompts.json", "docs/workshop.md"]
SKIP = shutil.ignore_patterns("screenshot*.png", "__pycache__")


class build_py_with_data(build_py):
    def run(self):
        super().run()
        out = Path(self.build_lib) / "specviz" / "_data"
        for name in DATA:
            source, dest = HERE / name, out / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, dest, ignore=SKIP, dirs_exist_ok=True)
            else:
                shutil.copy2(source, dest)


setup(cmdclass={"build_py": build_py_with_data})
