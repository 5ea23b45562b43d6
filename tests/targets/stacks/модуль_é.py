# модуль_é.py - non-ASCII names in a file with a non-ASCII name: the
# profile's function and file names must be this UTF-8, whatever kind of
# string the interpreter holds them in (PEP 393: "café" is Latin-1, the
# Cyrillic names are UCS-2, "𠀀" (U+20000) is UCS-4). Python 3 only: on
# 2.7 identifiers are ASCII (модуль_é_py2.py).
#
# @python 3.0-
# @expect <module> @module_call
# @expect Класс.café @cafe_call
# @expect функция @function_call
# @expect 𠀀 @astral_hot
from _clock import cpu_clock, deadline


def 𠀀(limit):
    x = 0
    while cpu_clock() < limit:
        for i in range(20000): x = (x * 31 + i) % 1000003  # @astral_hot
    return x


def функция(limit):
    return 𠀀(limit)  # @function_call


class Класс(object):
    def café(self, limit):
        return функция(limit)  # @cafe_call


Класс().café(deadline())  # @module_call
