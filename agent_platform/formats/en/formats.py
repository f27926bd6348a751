"""The formats every page uses, the admin's included: ISO dates and 24-hour times, as the operator pages write them
(Django's own English formats are 12-hour: "Dec. 2, 2026, 6:04 a.m.")."""

DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i"
DATETIME_FORMAT = "Y-m-d H:i"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
MONTH_DAY_FORMAT = "F j"
YEAR_MONTH_FORMAT = "F Y"
FIRST_DAY_OF_WEEK = 1  # Monday
