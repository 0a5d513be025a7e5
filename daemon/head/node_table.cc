// placeholder, replaced by the node table
