"""The client contract (contract.py) driven through kafka-python."""

from clients_py import KafkaPythonDriver
from contract import ClientContract


class TestKafkaPython(ClientContract):
    driver_class = KafkaPythonDriver
