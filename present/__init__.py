"""How an answer looks: one answer object per record (answer.py), drawn for the terminal
(text.py), in Markdown (markdown.py) and as the site's record page (html.py), with the display
pieces (display.py) and the verdict on a fix (verdict.py) every medium shares."""
