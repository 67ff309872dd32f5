"""The client contract (contract.py) driven through sarama."""

from clients_cli import SaramaDriver
from contract import ClientContract


class TestSarama(ClientContract):
    driver_class = SaramaDriver
