"""The client contract (contract.py) driven through java."""

from clients_cli import JavaDriver
from contract import ClientContract


class TestJava(ClientContract):
    driver_class = JavaDriver
