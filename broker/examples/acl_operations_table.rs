//! Prints the operation table of `docs/security.md` from `security::authorizer::operations`
//! (a test checks that the document holds exactly this table).
//!
//!     cargo run -p broker --example acl_operations_table

fn main() {
    print!(
        "{}",
        broker::security::authorizer::operations::markdown_table()
    );
}
