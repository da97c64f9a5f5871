"""The ground floor: records, errors, paths and files, text templates, inputs, the wall."""
