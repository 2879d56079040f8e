"""The wheel holds native libraries (libskade.so, libduckdb.so): tag it for this platform and
Python rather than as pure Python. Everything else is in pyproject.toml."""

from setuptools import setup
from setuptools.dist import Distribution


class BinaryDistribution(Distribution):
    def has_ext_modules(self) -> bool:
        return True


setup(distclass=BinaryDistribution)
