//! Prints the settings tables of the docs from the declarations: the broker's (README.md,
//! "Running the broker") and the compactor's (docs/configuration.md). Tests check that the
//! documents hold exactly these.
//!
//!     cargo run -p broker --example settings_tables

fn main() {
    println!("broker (README.md):\n");
    println!(
        "{}",
        storage::settings::markdown_table(&broker::config::settings::schema())
    );
    println!("compactor (docs/configuration.md):\n");
    println!(
        "{}",
        storage::settings::markdown_table(&compactor::cli::schema())
    );
}
