"""The bundled demo website the scripted demo and tests drive: a small shop and a contact form."""
