//! SASL on a connection.
