"""`evalrun view`: every run under a folder on one local page - the index (`index`), the pages it
links to, served or written (`site`), and the localhost server (`server`)."""
