//! Prints the tables of `docs/topic-configs.md` from the definitions (the compactor's tests
//! check that the document holds exactly these):
//!
//!     cargo run -p compactor --example topic_configs_table

fn main() {
    let flags: Vec<&str> = compactor::topic_flags::flag_settings().collect();
    println!("{}", storage::topics::topic_configs_table());
    println!("{}", storage::topics::broker_settings_table(&flags));
}
