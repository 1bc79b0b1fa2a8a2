"""The Round anatomy tab: where a measured round's time goes, against the prediction."""
