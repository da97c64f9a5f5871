"""`start board serve`: the board and the run history as a page in the browser, live.

`guard` decides who may use it (token, Host, Origin, the Content-Security-Policy), `views` reads
what the page shows a page at a time, `actions` makes a person's changes through the board's
own calls, `markdown` renders agents' and people's text without anything that runs, and
`server` is the HTTP server (the standard library's) with its watcher of changes. The page
itself is static/: one HTML file, one script and one style sheet, no build step, nothing
fetched from elsewhere. Nothing here is imported on the way to a launch.
"""
