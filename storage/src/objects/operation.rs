/// The class of an object-store call, used to aim injected faults and latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `put_opts`, `put_multipart_opts`, `copy_opts`, `rename_opts`: calls that write an object.
    Put,
    /// `get_opts` (so also `get`, `get_range`, `head`) and `get_ranges`.
    Get,
    /// `delete_stream` (so also `delete`); one call counts once however many paths it deletes.
    Delete,
    /// `list`, `list_with_offset`, `list_with_delimiter`.
    List,
}

impl Operation {
    pub const ALL: [Operation; 4] = [
        Operation::Put,
        Operation::Get,
        Operation::Delete,
        Operation::List,
    ];

    pub(crate) fn index(self) -> usize {
        match self {
            Operation::Put => 0,
            Operation::Get => 1,
            Operation::Delete => 2,
            Operation::List => 3,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Operation::Put => "put",
            Operation::Get => "get",
            Operation::Delete => "delete",
            Operation::List => "list",
        }
    }
}
