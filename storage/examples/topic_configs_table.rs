//! Prints the tables of `docs/topic-configs.md` from the definitions (the storage crate's tests
//! check that the document holds exactly these):
//!
//!     cargo run -p storage --example topic_configs_table

fn main() {
    let flags: Vec<&str> = storage::settings::flag_settings().collect();
    println!("{}", storage::topics::topic_configs_table());
    println!("{}", storage::topics::broker_settings_table(&flags));
}
