"""The client contract (contract.py) driven through confluent."""

from clients_py import ConfluentDriver
from contract import ClientContract


class TestConfluent(ClientContract):
    driver_class = ConfluentDriver
