"""The client contract (contract.py) driven through aiokafka."""

from clients_py import AioKafkaDriver
from contract import ClientContract


class TestAiokafka(ClientContract):
    driver_class = AioKafkaDriver
