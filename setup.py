"""Package discovery: every package folder under ``planner/`` is found, and the
repository's top-level ``models/`` and ``solvers/`` install inside the planner
namespace as ``planner.models`` and ``planner.solvers`` (with their subpackages).
Everything else is in ``pyproject.toml``."""

from setuptools import find_packages, setup

MAPPED = {"planner.models": "models", "planner.solvers": "solvers"}

packages = find_packages(include=["planner", "planner.*"])
for name, folder in MAPPED.items():
    packages += [name, *(f"{name}.{sub}" for sub in find_packages(folder))]

setup(packages=packages, package_dir=MAPPED)
