"""The client contract (contract.py) driven through franz."""

from clients_cli import FranzDriver
from contract import ClientContract


class TestFranz(ClientContract):
    driver_class = FranzDriver
