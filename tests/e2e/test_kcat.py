"""The client contract (contract.py) driven through kcat."""

from clients_cli import KcatDriver
from contract import ClientContract


class TestKcat(ClientContract):
    driver_class = KcatDriver
