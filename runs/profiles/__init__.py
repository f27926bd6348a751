"""Profiles: a workspace's named, reusable browser state (cookies, local storage, IndexedDB), sealed at rest.

The web's half lives here (the model, the services, the API and the pages); the worker's half, which starts a run's
browser from a profile and writes it back, is `runtime.profile_state`, and a sign-in by hand is `runtime.sign_in`.
"""
