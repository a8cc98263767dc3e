/* control.c — placeholder */
